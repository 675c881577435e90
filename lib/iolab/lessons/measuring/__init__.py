"""Lesson 09, measuring right: what ab and wrk report, open vs closed load, coordinated omission caught under a real stall."""
