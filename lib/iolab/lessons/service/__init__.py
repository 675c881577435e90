"""Lesson 15: running an async service.

Lesson 15, running an async service: the loop's lag, lost tasks, a graceful shutdown, cancellation that leaks.
"""
