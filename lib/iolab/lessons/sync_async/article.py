"""The figures the source articles published.

They stand beside what the lab measures on this machine.
"""

# Section 1 of the seed experiments: Tornado 4.2, one process, ab -n 200 -c 40, 1 s handlers.
SYNC_VS_ASYNC = {
    "setup": "Tornado 4.2, one process, Python 2.7, Core i3; ab -n 200 -c 40; handlers wait 1 s",
    "requests": 200,
    "concurrency": 40,
    "delay_ms": 1000,
    "sync": {
        "rps": 1.00,
        "ab_time_per_request_ms": 40149,
        "ab_time_per_request_all_ms": 1003,
        "duration_s": 200.7,
        "ab_percentiles": {50: 38133, 99: 199742, 100: 200746},
    },
    "async": {
        "rps": 39.35,
        "ab_time_per_request_ms": 1017,
        "ab_time_per_request_all_ms": 25,
        "duration_s": 5.08,
        "ab_percentiles": {50: 1005, 99: 1054, 100: 1055},
    },
}
