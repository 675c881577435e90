"""nginx answering / by itself.

Hello world from C, an event loop in each worker process, under the lab's contract.
"""

import _nginx
import _wrapper
from iolab.contract import HELLO_BODY, parse_args


def hello_server(listen):
    return f"""
    server {{
        listen {listen};
        location = / {{
            return 200 {_nginx.quote(HELLO_BODY)};
        }}
        location / {{
            return 404 "404 no route for $uri\\n";
        }}
    }}"""


def main():
    args = parse_args(__doc__, _nginx.add_arguments)
    with _nginx.Prefix() as prefix, _wrapper.in_charge(cleanup=prefix.remove) as programs:
        listener = _wrapper.bind_listener(args.host, args.port)
        prefix.write_config(args.workers, hello_server(_nginx.address(*listener.getsockname()[:2])))
        _nginx.start(programs, prefix, listener)
        programs.serve(listener)


if __name__ == "__main__":
    main()
