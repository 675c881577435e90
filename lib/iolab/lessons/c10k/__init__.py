"""Lesson 07, C10k: a client that holds thousands of idle connections, the limits it meets, and wrk's -c1000 scene."""
