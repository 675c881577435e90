"""Tests of lesson 09, measuring right (iolab.lessons.measuring), one file per module."""
