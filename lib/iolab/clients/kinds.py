"""Every kind of load client the lab can run.

Its module, its loop, what `concurrency` means for it, and its own options.

A kind is one module under iolab.clients and one frozen options class here;
the options check themselves through iolab.params when made, so a run's spec
(iolab.load.LoadSpec) keeps only what every kind shares. Adding a kind: see
this package's README.md.
"""

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Protocol

from ..params import ParameterError, check_choice, check_range
from .library import LIBRARIES

RATE_LIMITS = (0.01, 10_000_000.0)
THINK_LIMITS_S = (0.0, 600.0)
PIPELINE_DEPTH_LIMITS = (1, 1000)
SCHEDULES = ("fixed", "poisson")
SYNC_CLIENT_MAX_THREADS = 1000


class LoadParameterError(ParameterError):
    """A load run asked for something outside its allowed range; the text names parameter, value and range."""


def _check_flag(name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise LoadParameterError(f"{name} must be True or False, got {value!r}")


def _check_think(think_s: float) -> None:
    check_range("think_s", think_s, *THINK_LIMITS_S, integer=False, error=LoadParameterError)


class SharedFields(Protocol):
    """The fields every kind shares, as an options class reads them from a run's spec (iolab.load.LoadSpec).

    Read-only (properties here): a LoadSpec is frozen.
    """

    @property
    def url(self) -> str: ...

    @property
    def requests(self) -> int: ...

    @property
    def concurrency(self) -> int: ...

    @property
    def timeout_s(self) -> float: ...

    @property
    def max_duration_s(self) -> float: ...

    @property
    def processes(self) -> int: ...


@dataclass(frozen=True)
class Options:
    """What every kind's options class has: its fields as a dict, and a look at the shared spec."""

    def as_dict(self) -> dict[str, Any]:
        return {field.name: getattr(self, field.name) for field in fields(self)}

    def check_spec(self, spec: SharedFields) -> None:
        """Rules between this kind's meaning of the shared fields (spec: a LoadSpec) and its bounds."""
        if spec.requests < spec.concurrency:
            raise LoadParameterError(
                f"requests must be at least concurrency ({spec.concurrency}) so every user sends one,"
                f" got {spec.requests}"
            )


@dataclass(frozen=True)
class ClosedOptions(Options):
    """A closed loop on aiohttp: `concurrency` is the number of users, each sending when its last answer is in.

    `think_s`: each user waits this long after an answer before its next request.
    """

    keep_alive: bool = True
    think_s: float = 0.0

    def __post_init__(self) -> None:
        _check_flag("keep_alive", self.keep_alive)
        _check_think(self.think_s)


@dataclass(frozen=True)
class ClosedRawOptions(Options):
    """A closed loop on raw asyncio connections: `concurrency` is the number of users.

    `connect_first` (with keep_alive): every user opens its connection before the go.
    """

    keep_alive: bool = True
    think_s: float = 0.0
    connect_first: bool = False

    def __post_init__(self) -> None:
        _check_flag("keep_alive", self.keep_alive)
        _check_think(self.think_s)
        _check_flag("connect_first", self.connect_first)
        if self.connect_first and not self.keep_alive:
            raise LoadParameterError(
                "connect_first needs keep_alive=True: its users keep the connection they open; got keep_alive=False"
            )


@dataclass(frozen=True)
class ClosedSyncOptions(Options):
    """A closed loop on requests, one thread per user: `concurrency` is the number of users (threads)."""

    keep_alive: bool = True

    def __post_init__(self) -> None:
        _check_flag("keep_alive", self.keep_alive)

    def check_spec(self, spec: SharedFields) -> None:
        super().check_spec(spec)
        if spec.concurrency > SYNC_CLIENT_MAX_THREADS:
            raise LoadParameterError(
                f"concurrency must be at most {SYNC_CLIENT_MAX_THREADS} with the sync client"
                f" (one thread per user), got {spec.concurrency}"
            )


@dataclass(frozen=True)
class OpenOptions(Options):
    """An open loop: `concurrency` is the most requests outstanding, one per connection.

    `rate_rps` requests a second leave on a `schedule`: "fixed" (every 1/rate s) or
    "poisson" (random arrivals at that rate; the same `seed` gives the same arrivals).
    """

    rate_rps: float | None = None
    schedule: str = "fixed"
    seed: int | None = None
    keep_alive: bool = True

    def __post_init__(self) -> None:
        if self.rate_rps is None:
            raise LoadParameterError("rate_rps is required for the open loop: how many requests per second to send")
        check_range("rate_rps", self.rate_rps, *RATE_LIMITS, integer=False, error=LoadParameterError)
        check_choice("schedule", self.schedule, SCHEDULES, error=LoadParameterError)
        if self.seed is not None and (isinstance(self.seed, bool) or not isinstance(self.seed, int)):
            raise LoadParameterError(f"seed must be a whole number (or None for fresh arrivals), got {self.seed!r}")
        _check_flag("keep_alive", self.keep_alive)

    def check_spec(self, spec: SharedFields) -> None:
        pass  # arrivals follow the schedule, not the connections: fewer requests than connections is fine


@dataclass(frozen=True)
class PipelinedOptions(Options):
    """Pipelining on kept connections: `concurrency` is the number of connections.

    Each writes `pipeline_depth` requests at once, cycling through `pipeline_paths` (default: the url's path).
    """

    pipeline_depth: int | None = None
    pipeline_paths: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.pipeline_depth is None:
            raise LoadParameterError("pipeline_depth is required for a pipelined run: requests in flight per connection")
        check_range("pipeline_depth", self.pipeline_depth, *PIPELINE_DEPTH_LIMITS, error=LoadParameterError)
        if self.pipeline_paths is not None:
            if isinstance(self.pipeline_paths, str):
                raise LoadParameterError(f"pipeline_paths must be a list of paths, got {self.pipeline_paths!r}")
            object.__setattr__(self, "pipeline_paths", tuple(self.pipeline_paths))  # frozen: set this way
            for path in self.pipeline_paths:
                if not isinstance(path, str) or not path.startswith("/") or any(c in path for c in " \r\n"):
                    raise LoadParameterError(f"pipeline_paths must be paths like '/async-sleep?ms=0', got {path!r}")


BATCH_DEPTH_LIMITS = (1, 256)
# The batch client's own bounds on the shared fields, each with the name load.run_batches gives it.
BATCH_SHARED_LIMITS = {"concurrency": ("connections", 1, 1000, True), "max_duration_s": ("duration_s", 0.1, 600.0, False),
                       "timeout_s": ("timeout_s", 0.01, 60.0, False)}


@dataclass(frozen=True)
class BatchOptions(Options):
    """The batch client (clients/batch.py): `concurrency` is the number of connections, each keeping one batch of
    `depth` numbered requests in flight until `max_duration_s` or `requests` is reached.

    It counts, and keeps no row per request: its totals come in each process's done frame (LoadResult.reports).
    """

    depth: int = 16

    def __post_init__(self) -> None:
        check_range("depth", self.depth, *BATCH_DEPTH_LIMITS, error=LoadParameterError)

    def check_spec(self, spec: SharedFields) -> None:
        # `requests` bounds the run (the batch that reaches it is the last), so fewer than the connections is fine.
        for field, (called, low, high, whole) in BATCH_SHARED_LIMITS.items():
            name = field if field == called else f"{field} (load.run_batches's {called})"
            check_range(name, getattr(spec, field), low, high, integer=whole, error=LoadParameterError)


@dataclass(frozen=True)
class LibraryOptions(Options):
    """Calls through one HTTP library at its default limits (lesson 11): `concurrency` is the calls the program
    keeps started at once, threads for requests and tasks on one event loop for the others.

    `library`: "requests" (a Session), "requests_pool_block" (its adapter with pool_block=True), "aiohttp",
    "httpx" (AsyncClient), "tornado" (AsyncHTTPClient) or "executor" (urllib's urlopen through
    loop.run_in_executor(None, ...)). The library's own pool decides how many are on the wire at once.
    """

    library: str = "aiohttp"

    def __post_init__(self) -> None:
        check_choice("library", self.library, LIBRARIES, error=LoadParameterError)

    def check_spec(self, spec: SharedFields) -> None:
        super().check_spec(spec)
        if self.library.startswith("requests") and spec.concurrency > SYNC_CLIENT_MAX_THREADS:
            raise LoadParameterError(
                f"concurrency must be at most {SYNC_CLIENT_MAX_THREADS} with {self.library} (a thread per call),"
                f" got {spec.concurrency}"
            )


SUBSCRIBER_TRANSPORTS = ("ws", "sse", "poll")
PUBLISH_SIZE_LIMITS = (64, 1024 * 1024)  # the push servers' own bounds on /publish?size=
INTERVAL_LIMITS_S = (0.0, 60.0)


@dataclass(frozen=True)
class SubscribersOptions(Options):
    """Long-lived subscribers (clients/subscribers.py, lesson 12): `concurrency` is the number of subscribers,
    each one connection of `transport` ("ws", "sse" or "poll"), connected one after another; `requests` is
    subscribers × the messages each waits for.

    `compression` offers permessage-deflate (ws). With `publish`, the client asks the server for the messages
    itself (GET /publish?size=`size`&how=`how`, `interval_s` apart; `how` None: the server's default).
    `slow`: the user number of one subscriber that stops reading once connected (the slow consumer).
    """

    transport: str = "ws"
    compression: bool = False
    publish: bool = False
    size: int = 64
    how: str | None = None
    interval_s: float = 0.0
    slow: int | None = None

    def __post_init__(self) -> None:
        check_choice("transport", self.transport, SUBSCRIBER_TRANSPORTS, error=LoadParameterError)
        _check_flag("compression", self.compression)
        _check_flag("publish", self.publish)
        check_range("size", self.size, *PUBLISH_SIZE_LIMITS, error=LoadParameterError)
        if self.how is not None and (not isinstance(self.how, str) or not self.how.isidentifier()):
            raise LoadParameterError(f"how must be a broadcaster's name such as 'loop' (or None), got {self.how!r}")
        check_range("interval_s", self.interval_s, *INTERVAL_LIMITS_S, integer=False, error=LoadParameterError)
        if self.slow is not None:
            check_range("slow", self.slow, 0, 10_000, error=LoadParameterError)

    def check_spec(self, spec: SharedFields) -> None:
        if spec.requests % spec.concurrency:
            raise LoadParameterError(
                f"requests must be a multiple of concurrency ({spec.concurrency}): subscribers × the messages each"
                f" waits for, got {spec.requests}"
            )
        if self.slow is not None and self.slow >= spec.concurrency:
            raise LoadParameterError(
                f"slow must name one of the {spec.concurrency} subscribers (0 to {spec.concurrency - 1}),"
                f" got {self.slow}"
            )
        from ..environment import file_limit_reason  # the soft limit up to the hard one, here and in the clients

        problem = file_limit_reason(spec.concurrency // spec.processes + 1)
        if problem:
            raise LoadParameterError(f"concurrency: {problem}")


@dataclass(frozen=True)
class KindInfo:
    """What iolab.load needs to know to run a kind of client."""

    name: str
    module: str  # under iolab.clients; its run(spec, share, recorder) runs in a client process
    options: type[Options]  # the frozen options class: the kind's own fields, checked when made
    loop: str  # "closed", "open", "pipelined", "batch" or "push" (the server sends): how requests leave
    client: str  # what sends them: "async" (aiohttp), "raw" (asyncio protocols), "sync" (requests in threads),
    # "library" (the one its option names: threads, or an event loop the client makes itself)

    @property
    def option_names(self) -> tuple[str, ...]:
        return tuple(field.name for field in fields(self.options))

    @property
    def threads(self) -> bool:
        """True when the client's run is a plain function (threads, or a loop it makes itself), not a coroutine."""
        return self.client in ("sync", "library")


KINDS = {
    info.name: info
    for info in (
        KindInfo("closed_async", "closed_async", ClosedOptions, "closed", "async"),
        KindInfo("closed_raw", "closed_raw", ClosedRawOptions, "closed", "raw"),
        KindInfo("closed_sync", "closed_sync", ClosedSyncOptions, "closed", "sync"),
        KindInfo("open", "open_loop", OpenOptions, "open", "raw"),
        KindInfo("pipelined", "pipelined", PipelinedOptions, "pipelined", "raw"),
        KindInfo("batch", "batch", BatchOptions, "batch", "raw"),
        KindInfo("library", "library", LibraryOptions, "closed", "library"),
        KindInfo("subscribers", "subscribers", SubscribersOptions, "push", "raw"),
    )
}
# The closed loop's clients, as a lesson names them; the kind is f"closed_{client}".
CLIENTS = ("async", "raw", "sync")
OLD_KEYWORDS = ("loop", "client")  # how a run named its client before kinds: refused, with the kind= to give


def names() -> list[str]:
    """The kinds' names, sorted."""
    return sorted(KINDS)


def get(name: str) -> KindInfo:
    try:
        return KINDS[name]
    except KeyError:
        raise LoadParameterError(f"kind must be one of {names()}, got {name!r}") from None


def refuse_old_keywords(given: Mapping[str, object]) -> None:
    """Refuse `loop=` and `client=` among a run's keywords, naming the kind= that says the same."""
    old = [keyword for keyword in OLD_KEYWORDS if keyword in given]
    if not old:
        return
    loop, client = given.get("loop", "closed"), given.get("client")
    same = f"closed_{client or 'async'}" if loop == "closed" else loop
    instead = f"kind={same!r}" if same in KINDS else "kind="
    said = ", ".join(f"{keyword}={given[keyword]!r}" for keyword in old)
    raise LoadParameterError(
        f"{said}: a run names its client with kind= alone; give {instead} (the kinds: {', '.join(names())})"
    )


def takers(option: str) -> list[str]:
    """The kinds that take `option`."""
    return [name for name in names() if option in KINDS[name].option_names]


def options_for(name: str, **given: Any) -> Options:
    """The kind's options made from `given`; an option the kind does not take is refused with the kinds that do."""
    info = get(name)
    for option in given:
        if option not in info.option_names:
            others = takers(option)
            where = f"the kinds that take it: {', '.join(others)}" if others else "no kind takes it"
            raise LoadParameterError(f"{option} is not an option of the {name!r} client kind; {where}")
    return info.options(**given)
