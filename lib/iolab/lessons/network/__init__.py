"""Lesson 14, the network is not loopback: round trips, and Nagle against the delayed ACK."""
