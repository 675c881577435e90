"""Lesson 06, workers, threads and processes.

Measured demands, the model that predicts each configuration, the GIL probe, the USL fit, views and
exercises.
"""
