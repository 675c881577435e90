"""Lesson 02, synchronous vs asynchronous.

The article's figures and the exercises.
"""
