"""Lesson 01, the bank queue.

A simulation that predicts the servers, its measurements and its views.
"""
