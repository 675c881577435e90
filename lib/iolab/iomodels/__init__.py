"""Stevens's five UNIX IO models as small programs that run on real loopback sockets and record their own timelines."""
