"""iolab: learning synchronous vs asynchronous IO by measuring it.

Real servers, real clients and live plots.
"""
