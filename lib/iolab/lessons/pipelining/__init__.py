"""Lesson 08, pipelining.

What one request costs on every server, and how pipelining and batched writes remove most of it.
"""
