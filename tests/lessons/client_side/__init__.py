"""Tests of lesson 11, the client side (iolab.lessons.client_side), one file per module."""
