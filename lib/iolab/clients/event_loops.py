"""Which event loop a client runs on: the one place a client picks it.

uvloop where it is installed (or asked for), else asyncio's own. The client
process (process.py) and a kind that makes its loop itself (library.py) both
ask here, and iolab.load checks a run's `event_loop` against the same names,
as asyncio keeps `new_event_loop` in `events` for whoever needs one.
"""

import asyncio
import importlib.util

EVENT_LOOPS = ("auto", "uvloop", "asyncio")


def uvloop_installed() -> bool:
    return importlib.util.find_spec("uvloop") is not None


def new_event_loop(choice: str = "auto") -> asyncio.AbstractEventLoop:
    """uvloop when installed ("auto") or asked for ("uvloop", which then must be installed), else asyncio's loop."""
    if choice in ("auto", "uvloop"):
        try:
            import uvloop
        except ImportError:
            if choice == "uvloop":
                raise
        else:
            return uvloop.new_event_loop()
    return asyncio.new_event_loop()
