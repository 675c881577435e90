"""iolab.syscalls: strace's summary parsed, and a real process's system calls counted exactly."""

import subprocess
import sys

import pytest

from iolab import syscalls

SUMMARY = """\
% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 73.77    0.746286       53306        14           clock_nanosleep
 17.76    0.179703           9     18866           write
  0.08    0.000809          10        77        13 futex
------ ----------- ----------- --------- --------- ----------------
100.00    1.011587          26     18957        13 total
"""

# Waits for a line, writes to /dev/null `n` times, says so, and waits again: so the count is exact.
WRITER = """
import os, sys
devnull = os.open(os.devnull, os.O_WRONLY)
n = int(sys.argv[1])
sys.stdin.readline()
for _ in range(n):
    os.write(devnull, b"x")
os.write(1, b"done\\n")
sys.stdin.readline()
"""


def test_parse_summary_reads_calls_and_seconds_and_skips_the_total():
    calls, seconds = syscalls.parse_summary(SUMMARY)
    assert calls == {"clock_nanosleep": 14, "write": 18866, "futex": 77}
    assert seconds["write"] == pytest.approx(0.179703)


@pytest.mark.skipif(syscalls.missing_reason() is not None, reason=syscalls.missing_reason() or "")
def test_counting_a_process_that_writes_exactly_n_times():
    writes = 137
    process = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(writes)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        try:
            with syscalls.counting(process.pid, only=syscalls.WRITES) as counts:
                process.stdin.write("go\n")
                process.stdin.flush()
                assert process.stdout.readline() == "done\n"
        except syscalls.SyscallCountUnavailable as error:
            pytest.skip(str(error))
        process.stdin.write("bye\n")
        process.stdin.flush()
        assert process.wait(timeout=10) == 0  # strace let it go on running
    finally:
        process.kill()
        process.wait()
    assert counts.calls == {"write": writes + 1}  # and the one that said "done"
    assert counts.of(syscalls.WRITES) == counts.total == writes + 1
    assert counts.elapsed_s > 0


def test_counting_a_process_that_does_not_exist_says_why():
    if syscalls.missing_reason():
        pytest.skip(syscalls.missing_reason())
    with pytest.raises(syscalls.SyscallCountUnavailable, match="could not trace pid"), syscalls.counting(2**22 + 7):
        pass
