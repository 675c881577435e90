"""iolab: learning synchronous vs asynchronous IO by measuring it.

iolab: real servers, real clients and live plots for learning synchronous vs asynchronous IO.
"""
