"""Tests of lesson 06, workers, threads and processes (iolab.lessons.workers), one file per module."""
