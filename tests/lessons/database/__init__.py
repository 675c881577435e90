"""Lesson 13's tests: a real database.

Its theory, parameters, claims and the runs against a real PostgreSQL.
"""
