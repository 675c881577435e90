"""Lesson 12's tests: long-lived connections.

Its servers, subscribers, proxies and the browser page.
"""
