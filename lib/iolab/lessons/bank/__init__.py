"""Lesson 01, the bank queue: a simulation that predicts the servers, its measurements and its views."""
