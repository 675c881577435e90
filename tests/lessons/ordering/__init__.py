"""Tests of lesson 03, handler ordering (iolab.lessons.ordering), one file per module."""
