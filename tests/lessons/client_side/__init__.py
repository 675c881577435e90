"""Lesson 11, the client side: its fan-outs, the libraries ' limits, timeouts and the blocking call."""
