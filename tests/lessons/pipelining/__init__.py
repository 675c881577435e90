"""Tests of lesson 08, pipelining (iolab.lessons.pipelining), one file per module."""
