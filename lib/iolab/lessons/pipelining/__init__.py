"""Lesson 08, pipelining: what one request costs on every server, and how pipelining and batched writes remove most of it."""
