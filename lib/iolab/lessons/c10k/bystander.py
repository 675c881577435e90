"""A process that touches MiB of memory and then only waits: the bystander in lesson 07's memory-cgroup run.

`python -m iolab.lessons.c10k.bystander MIB`: waits for a line on stdin (its parent moves it into a cgroup first),
touches MIB MiB, page by page, so the cgroup is charged for them, says `ready`, and then waits for end of file on
stdin. It dies with its parent, as every child of the lab does.
"""

import mmap
import sys

from iolab.contract import die_with_parent


def main():
    die_with_parent()
    size = int(sys.argv[1]) << 20
    sys.stdin.readline()
    block = bytearray(size)  # zero pages the kernel has not handed out yet: untouched, uncharged
    block[::mmap.PAGESIZE] = b"\1" * len(range(0, size, mmap.PAGESIZE))  # one write per page: now every page is charged
    print("ready", flush=True)
    sys.stdin.read()


if __name__ == "__main__":
    main()
