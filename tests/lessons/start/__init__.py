"""Tests of lesson 00, start here (iolab.lessons.start), one file per module."""
