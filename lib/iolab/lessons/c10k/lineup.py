"""The servers lesson 07 holds connections on.

Each by registry name, with the options that let it keep idle connections open.
"""

from iolab import registry

TARGET_KB = 16  # the lesson's mark for an idle connection on an event loop
IDLE_S = 3600  # far longer than any run: a server must not close what we are measuring
RAW_ASYNCIO = ("protocol_app", "pipeline_app")  # a bare asyncio Protocol server, whichever the registry has


def _raw_asyncio():
    return next((name for name in RAW_ASYNCIO if name in registry.SERVERS), RAW_ASYNCIO[0])


def _with_idle(name, options, option="idle_timeout"):
    """Add a long idle timeout (gunicorn's is 2 s unless told); a server without that option is a mistake here, not
    something to skip: the server would close what the lesson is still weighing."""
    if option not in registry.get(name).options:
        raise ValueError(f"{name} has no {option!r} option, so it would keep its own idle timeout")
    return {**options, option: IDLE_S}


def servers():
    """{label: (registry name, options)} in the order the lesson compares them: event loops first, then threads."""
    raw = _raw_asyncio()
    return {
        "tornado_app": ("tornado_app", {}),
        "step4_event_loop": ("step4_event_loop", _with_idle("step4_event_loop", {})),
        f"{raw} (raw asyncio)": (raw, {}),
        "threaded_app": ("threaded_app", _with_idle("threaded_app", {})),
        "gunicorn gthread": ("gunicorn_app", _with_idle(
            "gunicorn_app", {"workers": 1, "threads": 4, "worker_class": "gthread"}, option="keepalive")),
    }


EVENT_LOOPS = ("tornado_app", "step4_event_loop", "raw asyncio")


def is_event_loop(label):
    """One thread, one loop: the servers whose memory per connection the lesson holds to 16 KiB."""
    return any(label.startswith(name) or name in label for name in EVENT_LOOPS)


def thread_per_connection(label):
    return label == "threaded_app"


def missing(name):
    """Why `name` cannot run here (not in the registry yet, or a package missing), or None."""
    return registry.missing(name)
