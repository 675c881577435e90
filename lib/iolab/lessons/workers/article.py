"""The deployment figures the source articles published.

They stand beside what this machine measures.
"""

# Nginx in front of Tornado processes, ab -n 20000, the same hello-world service.
TORNADO_BEHIND_NGINX = {
    "setup": "nginx in front of Tornado processes; ab -n 20000; hello world",
    "rps": {1: 672.55, 4: 2187.45},  # Tornado processes -> requests per second
}

# gunicorn + Flask hello world against nginx answering by itself; wrk on an 8-core server.
NGINX_HELLO = {
    "setup": "nginx answering a fixed 'hello world!' itself; wrk, 8-core server",
    "rps": {"-t16 -c64": 11_272, "-t32 -c160": 22_350, "-t64 -c320": 24_458},
    "ceiling_rps": 24_458,
}
GUNICORN_MATRIX = {
    "setup": "gunicorn + Flask hello world; wrk -t64 -c320 -d10, 8-core server",
    # (workers, threads) -> (requests per second, mean latency ms); threads 1 means sync workers.
    "cells": {
        (32, 1): (2115, 76),
        (1, 32): (882, 122),  # with 73 timeouts
        (8, 8): (4294, 74),
        (16, 16): (5150, 64),
        (8, 32): (4040, 80),
        (16, 32): (4861, 67),
    },
    "cores": 8,
}


def best_gunicorn_cell():
    """The article's best gunicorn configuration: ((workers, threads), rps)."""
    cell = max(GUNICORN_MATRIX["cells"], key=lambda key: GUNICORN_MATRIX["cells"][key][0])
    return cell, GUNICORN_MATRIX["cells"][cell][0]
