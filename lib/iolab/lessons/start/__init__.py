"""Lesson 00, start here: the first experiment's exercises."""
