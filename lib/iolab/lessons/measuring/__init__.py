"""Lesson 09, measuring right: what ab and wrk report, open vs closed load, coordinated omission caught under a real stall."""

from .proof import check_claims, check_parameters, results_of, save  # noqa: F401  the notebook's one-line calls
