"""Lesson 04, the five IO models of UNIX, each run on a real socket and traced."""
