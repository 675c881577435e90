"""Tests of lesson 01, the bank queue (iolab.lessons.bank), one file per module."""
