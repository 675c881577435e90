"""Tests of the lessons, one folder per lesson as under lib/iolab/lessons.

Every lesson's exercises in test_exercises.py.
"""
