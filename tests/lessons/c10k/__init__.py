"""Tests of lesson 07, C10k (iolab.lessons.c10k), one file per module."""
