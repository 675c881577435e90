"""Lesson 02, synchronous vs asynchronous: the article's figures and the exercises."""
