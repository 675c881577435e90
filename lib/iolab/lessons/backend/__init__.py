"""Lesson 10, a slow backend behind an async server: Redis, a Celery worker pool and three front ends, with the bottleneck law."""
