"""Tests of lesson 02, sync vs async (iolab.lessons.sync_async), one file per module."""
