"""The hand-built server of lesson 05 in Tornado's three parts.

Loop (IOLoop), stream (IOStream), connection (HTTP1Connection).
"""
