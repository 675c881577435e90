"""Tests of lesson 04, the IO models (iolab.lessons.io_models), one file per module."""
