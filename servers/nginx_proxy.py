"""nginx as a keep-alive reverse proxy to --upstreams lab servers it starts and stops with itself."""

import subprocess
import sys
from pathlib import Path

import _nginx
import _wrapper
from _wrapper import count_between
from iolab import registry
from iolab.contract import MAX_MS, parse_args

HERE = Path(__file__).resolve().parent
MAX_UPSTREAMS = 16


def add_arguments(parser):
    _nginx.add_arguments(parser)
    parser.add_argument(
        "--upstreams", type=count_between(1, MAX_UPSTREAMS), default=2,
        help="how many upstream servers nginx spreads the requests over",
    )
    parser.add_argument("--upstream", default="tornado_app", help="which lab server each upstream is")


def upstream_script(name):
    """The file of the lab server to start as an upstream; a proxy behind a proxy is refused."""
    info = registry.get(name)
    if info.script == Path(__file__).name:
        raise SystemExit(f"--upstream must be a lab server other than the proxy itself, got {name!r}")
    reason = info.missing()
    if reason:
        raise SystemExit(f"--upstream: {reason}")
    return HERE / info.script


def proxy_server(listen, upstreams):
    servers = "\n".join(f"        server {_nginx.address(host, port)};" for host, port in upstreams)
    return f"""
    upstream lab_upstreams {{
        least_conn;  # each request goes to the upstream with the fewest requests in flight
{servers}
        keepalive 1024;  # idle connections each worker keeps to the upstreams, instead of one per request
        keepalive_requests 1000000;
    }}
    server {{
        listen {listen};
        location / {{
            proxy_pass http://lab_upstreams;
            proxy_http_version 1.1;  # keep-alive to the upstreams needs HTTP/1.1
            proxy_set_header Connection "";  # and no "Connection: close" passed on
            proxy_read_timeout {MAX_MS // 1000 + 15}s;  # longer than the longest request the contract allows
        }}
    }}"""


def main():
    args = parse_args(__doc__, add_arguments)
    try:
        script = upstream_script(args.upstream)
    except ValueError as error:
        raise SystemExit(f"--upstream: {error}") from None
    with _nginx.Prefix() as prefix, _wrapper.in_charge(cleanup=prefix.remove) as programs:
        listener = _wrapper.bind_listener(args.host, args.port)
        # Started together, read in turn: the upstreams boot side by side.
        upstreams = [
            programs.start(f"upstream {args.upstream}", [sys.executable, str(script), "--port", "0"], stdout=subprocess.PIPE)
            for _ in range(args.upstreams)
        ]
        addresses = [_wrapper.read_listening(upstream) for upstream in upstreams]
        prefix.write_config(args.workers, proxy_server(_nginx.address(*listener.getsockname()[:2]), addresses))
        _nginx.start(programs, prefix, listener)
        programs.serve(listener)


if __name__ == "__main__":
    main()
