"""Lesson 12, long-lived connections: its servers, subscribers, proxies and the browser page."""
