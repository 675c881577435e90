"""Tests of the lessons, one folder per lesson as under lib/iolab/lessons; every lesson's exercises in test_exercises.py."""
