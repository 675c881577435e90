"""One subpackage per lesson, named by topic.

Its model, probes, views and exercises. Each imports only the core.
"""
