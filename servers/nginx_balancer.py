"""nginx taking turns over upstream servers listed in a file, read again on SIGHUP (nginx -s reload).

An operator's balancer: the upstreams are not nginx's children, so one of them may stop and start again while nginx
runs on. `--upstreams-file` lists them, one `HOST:PORT` a line, `HOST:PORT down` for one taken out. SIGHUP makes
this wrapper read the file again, write nginx's configuration from it and reload nginx (SIGHUP to its master):
new workers take the new list, the old ones finish what they hold. A file that does not parse is logged and the
running configuration kept. Without `--upstreams-file` it starts two tornado_app of its own, so it runs alone too.
"""

import os
import signal
import subprocess
import sys

import _nginx
import _wrapper
from iolab.contract import MAX_MS, check_loopback, log, parse_args
from nginx_proxy import upstream_script

OWN_UPSTREAMS = 2  # without a file: a pair, so there is something to take turns over


def add_arguments(parser):
    _nginx.add_arguments(parser)
    parser.add_argument("--upstreams-file", help="the upstreams, one HOST:PORT a line, 'HOST:PORT down' if out")


def read_upstreams(path):
    """[(host, port, down)] from the file; ValueError naming the line that is wrong. Loopback addresses only."""
    with open(path) as file:
        lines = [line.split() for line in file if line.strip()]
    if not lines:
        raise ValueError(f"{path} lists no upstream")
    upstreams = []
    for words in lines:
        host, _, port = words[0].rpartition(":")
        if len(words) > 2 or words[1:] not in ([], ["down"]) or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"{path}: expected 'HOST:PORT' or 'HOST:PORT down', got {' '.join(words)!r}")
        check_loopback(host.strip("[]"))  # the lab never sends a request off this machine
        upstreams.append((host.strip("[]"), int(port), words[1:] == ["down"]))
    return upstreams


def balancer_server(listen, upstreams):
    servers = "\n".join(
        # max_fails=0: nginx would otherwise skip a server for 10 s after one failed request (its passive health
        # check) and hide how many a restart fails. Plain round robin, so each upstream gets every other request.
        f"        server {_nginx.address(host, port)} max_fails=0{' down' if down else ''};"
        for host, port, down in upstreams
    )
    return f"""
    upstream lab_upstreams {{
{servers}
    }}
    server {{
        listen {listen};
        location / {{
            proxy_pass http://lab_upstreams;
            # By default nginx tries a failed GET again on the next upstream, and a client never sees the failure
            # (a POST too, when its connection was refused before nginx sent it). A client here must see what a
            # restart costs, so nothing is tried twice: every failed attempt is the client's 502.
            proxy_next_upstream off;
            proxy_read_timeout {MAX_MS // 1000 + 15}s;  # longer than the longest request the contract allows
        }}
    }}"""


def own_upstreams(programs, prefix):
    """Start tornado_app twice in this group and list them in a file of the prefix; its path."""
    script = upstream_script("tornado_app")
    started = [programs.start("upstream tornado_app", [sys.executable, str(script), "--port", "0"],
                              stdout=subprocess.PIPE) for _ in range(OWN_UPSTREAMS)]
    path = os.path.join(prefix.path, "upstreams.txt")
    with open(path, "w") as file:
        for process in started:
            host, port = _wrapper.read_listening(process)
            file.write(f"{host}:{port}\n")
    return path


def main():
    args = parse_args(__doc__, add_arguments)
    with _nginx.Prefix() as prefix, _wrapper.in_charge(cleanup=prefix.remove) as programs:
        listener = _wrapper.bind_listener(args.host, args.port)
        listen = _nginx.address(*listener.getsockname()[:2])
        path = args.upstreams_file or own_upstreams(programs, prefix)
        try:
            prefix.write_config(args.workers, balancer_server(listen, read_upstreams(path)))
        except (OSError, ValueError) as error:
            raise SystemExit(f"--upstreams-file: {error}") from None
        nginx = _nginx.start(programs, prefix, listener)

        def reload(signum, frame):
            try:
                prefix.write_config(args.workers, balancer_server(listen, read_upstreams(path)))
            except (OSError, ValueError) as error:
                log(f"not reloaded, the running configuration stays: {error}")
                return
            nginx.send_signal(signal.SIGHUP)

        signal.signal(signal.SIGHUP, reload)
        programs.serve(listener)


if __name__ == "__main__":
    main()
