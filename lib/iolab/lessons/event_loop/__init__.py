"""Lesson 05, an event loop from scratch: probes of the step servers, the loop's trace view and the exercises."""
