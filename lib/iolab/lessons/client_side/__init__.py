"""Lesson 11: the client side.

Lesson 11, the client side: fan-outs, the limits libraries set, timeouts and the blocking call.
"""
