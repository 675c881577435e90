"""Lesson 03, handler ordering.

Timelines of two requests and the exercises.
"""
