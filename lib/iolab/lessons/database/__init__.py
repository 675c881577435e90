"""Lesson 13: a real database behind an async server.

Lesson 13, a real database: blocking and async drivers, the pool as the bottleneck you size, PostgreSQL's backends.
"""
