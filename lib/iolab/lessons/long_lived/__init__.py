"""Lesson 12: long-lived connections.

Lesson 12, long-lived connections: what an open connection costs, fan-out to N subscribers, slow consumers.
"""
