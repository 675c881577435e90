"""Lesson 13, a real database: its theory, parameters, claims and the runs against a real PostgreSQL."""
