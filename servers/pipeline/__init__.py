"""The pipelining server's parts beside its teaching file: the two request parsers and the hardening a student need not read."""
