"""Lesson 03, handler ordering: timelines of two requests and the exercises."""
