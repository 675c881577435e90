"""Tests of lesson 10, a slow backend (iolab.lessons.backend), one file per module."""
