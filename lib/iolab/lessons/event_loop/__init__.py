"""Lesson 05, an event loop from scratch.

Probes of the step servers, the loop's trace view and the exercises.
"""
