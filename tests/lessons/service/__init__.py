"""Lesson 15, running a service: its lag windows, lost tasks, shutdown under load and the leaking pool."""
