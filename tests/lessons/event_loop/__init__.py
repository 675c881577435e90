"""Tests of lesson 05, the event loop from scratch (iolab.lessons.event_loop), one file per module."""
