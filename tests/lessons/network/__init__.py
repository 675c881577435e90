"""Lesson 14, the network: its parameters, its model, its claims, and its client against a real server."""
