"""nginx in front of one lab push server.

WebSockets, SSE and long polls through a proxy.

It starts --upstream (a lab server, tornado_push by default) and stops it with
itself. --upgrade-headers on passes the Upgrade and Connection headers on, which
a WebSocket needs to cross a proxy; off leaves them out, as a plain proxy
configuration does. --read-timeout-s is proxy_read_timeout: nginx gives up on
an upstream that sends nothing for that long (an idle long poll gets a 504).
Answers are not buffered, so each event leaves nginx as it arrives.
"""

import subprocess
import sys
from pathlib import Path

import _nginx
import _wrapper
from _wrapper import count_between
from iolab import registry
from iolab.contract import parse_args

HERE = Path(__file__).resolve().parent
MAX_READ_TIMEOUT_S = 3600


def add_arguments(parser):
    parser.add_argument("--upstream", default="tornado_push", help="which lab server nginx proxies to")
    parser.add_argument(
        "--upgrade-headers", choices=["on", "off"], default="on",
        help="on: pass Upgrade and Connection on to the upstream, so a WebSocket can open through nginx",
    )
    parser.add_argument(
        "--read-timeout-s", type=count_between(1, MAX_READ_TIMEOUT_S), default=60,
        help="proxy_read_timeout: seconds nginx waits for the upstream to send anything (nginx's default: 60)",
    )


def upstream_script(name):
    """The file of the lab server to start behind nginx; a proxy, or a port that is not HTTP, is refused."""
    try:
        info = registry.get(name)
    except ValueError as error:
        raise SystemExit(f"--upstream: {error}") from None
    if info.needs_programs == ("nginx",) or info.protocol != "http":
        raise SystemExit(f"--upstream must be a lab HTTP server that is not itself nginx, got {name!r}")
    reason = info.missing()
    if reason:
        raise SystemExit(f"--upstream: {reason}")
    return HERE / info.script


def proxy_server(listen, upstream, upgrade_headers, read_timeout_s):
    if upgrade_headers == "on":
        # Hop-by-hop headers stop at a proxy unless it sets them again (RFC 9110, 7.6.1).
        headers = """
            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header Connection $connection_upgrade;"""
    else:
        headers = ""
    return f"""
    map $http_upgrade $connection_upgrade {{
        default upgrade;
        '' close;
    }}
    server {{
        listen {listen};
        location / {{
            proxy_pass http://{upstream};
            proxy_http_version 1.1;  # the same in both cases: only the headers differ{headers}
            proxy_buffering off;  # each event and answer leaves as it arrives
            proxy_read_timeout {read_timeout_s}s;
        }}
    }}"""


def main():
    args = parse_args(__doc__, add_arguments)
    script = upstream_script(args.upstream)
    with _nginx.Prefix() as prefix, _wrapper.in_charge(cleanup=prefix.remove) as programs:
        listener = _wrapper.bind_listener(args.host, args.port)
        upstream = programs.start(
            f"upstream {args.upstream}", [sys.executable, str(script), "--port", "0"], stdout=subprocess.PIPE
        )
        address = _nginx.address(*_wrapper.read_listening(upstream))
        listen = _nginx.address(*listener.getsockname()[:2])
        prefix.write_config(1, proxy_server(listen, address, args.upgrade_headers, args.read_timeout_s))
        _nginx.start(programs, prefix, listener)
        programs.serve(listener)


if __name__ == "__main__":
    main()
