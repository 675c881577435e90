"""A real link between a client and a server network namespace: round trip, loss and rate, built and removed by the lab.

    from iolab import link
    link.why_not()                      # None where this user can build a link here; else one sentence why not
    spec = link.LinkSpec(rtt_ms=40.0, loss_percent=0.0, rate_mbit=None)  # ParameterError naming a bad field
    with link.build(spec) as path:      # a Link (link.start(spec) returns one to close() later, across cells)
        path.client_host, path.server_host   # 198.18.0.1 and 198.18.0.2: they exist only inside the namespaces
        path.argv("client", ["curl", ...])   # that command, run inside the client's namespace
        path.spawn("server", argv, **kw)     # children.spawn inside the server's namespace
        path.set(rtt_ms=80, loss_percent=2)  # change the link between runs (rate_mbit=None removes the rate)
        path.delay_line_usage()              # Usage(cpu_s, packets, dropped, overflowed): was the delay line a
                                             # bottleneck? (it unpacks as cpu_s, packets, dropped)
    servers.serve("tornado_app", link=path)  # the server runs in the server namespace, bound to server_host
    load.run_load(url, ..., link=path)       # the load clients run in the client namespace

The path: client namespace (eth0) <-veth-> middle namespace (toclient, toserver; the delay line,
iolab.delay_line, moves each frame to the other side after rtt/2 and drops it with chance loss, each way)
<-veth-> server namespace (eth0). A rate is a tbf qdisc on both eth0 (each side's sending). Offloads are off so
that a frame is one segment and one drop loses one. As root the namespaces come from `unshare --net`; as an
ordinary user from `unshare --user --map-root-user --net`, entered with `nsenter --preserve-credentials`.
Every namespace is unnamed and held by a process started with children.spawn, so all of it (namespaces,
interfaces, qdiscs, the delay line) goes when the kernel does, even on SIGKILL.

Inside the link a sender may choose any congestion control the kernel has (TCP_CONGESTION: reno, cubic, bbr),
as an ordinary user too: the namespaces are its own. Outside, an ordinary user only gets those in
net.ipv4.tcp_allowed_congestion_control. The notebook's kernel stays outside: it reaches the servers only
through processes started with argv() or spawn() (the load clients, with run_load(link=)).
"""

import atexit
import contextlib
import dataclasses
import functools
import json
import os
import subprocess
import tempfile
import threading
from collections.abc import Iterator, Sequence
from typing import IO, Any, cast

from .children import python, read_until, run, spawn
from .contract import LAB_NETNS_VARIABLE, find_program
from .params import ParameterError, check_range

CLIENT_HOST = "198.18.0.1"
SERVER_HOST = "198.18.0.2"
PREFIX_LENGTH = 24
SIDES = ("client", "server")
HOSTS = {"client": CLIENT_HOST, "server": SERVER_HOST}
# Fixed addresses, so each side learns the other's once, by a permanent neighbour entry: no ARP crosses the delay line.
MACS = {"client": "02:00:c6:12:00:01", "server": "02:00:c6:12:00:02"}
MIDDLE_ENDS = {"client": "toclient", "server": "toserver"}
READY_TIMEOUT_S = 10.0
COMMAND_TIMEOUT_S = 10.0
MAX_RTT_MS = 5000.0
MAX_LOSS_PERCENT = 50.0
RATE_MBIT = (0.01, 10_000.0)
OFFLOADS = ("tx", "off", "sg", "off", "tso", "off", "gso", "off", "gro", "off")
TBF_LATENCY_MS = 200  # how long a frame may wait in the rate's queue before tbf drops it


class LinkError(RuntimeError):
    """A link could not be built or changed; the text says which step and what the tool said."""


@dataclasses.dataclass(frozen=True)
class LinkSpec:
    """What the link does to each frame: rtt_ms of delay per round trip (half each way), loss_percent dropped each
    way, and at most rate_mbit megabits per second each way (None: no limit but the delay line's)."""

    rtt_ms: float = 40.0
    loss_percent: float = 0.0
    rate_mbit: float | None = None

    def __post_init__(self) -> None:
        check_range("rtt_ms", self.rtt_ms, 0, MAX_RTT_MS, integer=False)
        check_range("loss_percent", self.loss_percent, 0, MAX_LOSS_PERCENT, integer=False)
        if self.rate_mbit is not None:
            check_range("rate_mbit", self.rate_mbit, *RATE_MBIT, integer=False)


@dataclasses.dataclass(frozen=True)
class Usage:
    """What the delay line has cost since the link was built: its CPU (user and system: the system part includes the
    receiving side's stack, which a veth runs in the sender's context), the frames it read, those it dropped on purpose
    (the loss), and those the kernel dropped because it fell behind (`overflowed`: above zero, the delay line and not
    the link set the pace). Unpacks as (cpu_s, packets, dropped)."""

    cpu_s: float
    packets: int
    dropped: int
    overflowed: int = 0

    def __iter__(self) -> Iterator[float]:
        return iter((self.cpu_s, self.packets, self.dropped))


# --- May this user build one here? ---------------------------------------------------------------------

@functools.cache
def tools() -> dict[str, str | None]:
    """The programs a link needs, each with its full path (ip and ethtool live in sbin), or None where missing."""
    return {"ip": find_program("ip"), "tc": find_program("tc"), "ethtool": find_program("ethtool"),
            "unshare": find_program("unshare"), "nsenter": find_program("nsenter")}


def tool(name: str) -> str:
    """The full path of a program why_not() found."""
    return tools()[name] or name


def mode() -> str | None:
    """"root" (unshare --net), "user" (in a user namespace of our own), or None where neither is allowed."""
    return _found()[0]


def why_not() -> str | None:
    """None where this user can build a link on this machine; else one sentence saying why not."""
    return _found()[1]


@functools.cache
def _found() -> tuple[str | None, str | None]:
    """(the mode, why not), from one probe of each way in: the way that made a veth pair is the way a link is built."""
    if not os.path.exists("/proc/self/ns/net"):
        return None, "this system has no network namespaces (Linux only), so the lab cannot build a link here"
    missing = [name for name, path in tools().items() if path is None]
    if missing:
        return None, (f"building a link needs {', '.join(missing)} (from iproute2, util-linux and ethtool),"
                      " which this machine does not have")
    if os.geteuid() == 0 and _try([tool("unshare"), "--net", *_probe()]) is None:
        return "root", None
    as_user = _try([tool("unshare"), "--user", "--map-root-user", "--net", *_probe()])
    if as_user is None:
        return "user", None
    return None, f"this machine lets this user make no network namespace with a veth pair (unshare said: {as_user})"


def _probe() -> list[str]:
    return [tool("ip"), "link", "add", "probe0", "type", "veth", "peer", "name", "probe1"]


def _try(argv: list[str]) -> str | None:
    """None if `argv` ran and succeeded; else the last line it said, or why it could not start."""
    try:
        done = run(argv, COMMAND_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as error:
        return str(error)
    if done.returncode == 0:
        return None
    said = (done.stderr or done.stdout).strip().splitlines()
    return said[-1] if said else f"{argv[0]} exited with code {done.returncode}"


# --- The processes that hold the namespaces ----------------------------------------------------------

class Holder:
    """A child process in a namespace of its own (the delay line, or a holder only): its pid and namespace."""

    def __init__(self, argv: list[str]) -> None:
        self.stderr: IO[bytes] = tempfile.TemporaryFile()
        self.process = spawn(argv, stdin=subprocess.PIPE, stderr=self.stderr)
        self.netns = self._ready()
        self.lock = threading.Lock()

    @property
    def pid(self) -> int:
        return self.process.pid

    def _ready(self) -> str:
        try:
            said = read_until(cast(IO[bytes], self.process.stdout), b"\n", READY_TIMEOUT_S)
        except TimeoutError:
            said = b""
        line = said.decode(errors="replace").strip()
        if not line.startswith("READY net:"):
            self.close()
            raise LinkError(f"a namespace holder did not start (it said {line!r}): {self.stderr_text()}")
        return line.split(" ", 1)[1]

    def stderr_text(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read().decode(errors="replace").strip()[-2000:]

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        """Send one request to the delay line and return its answer."""
        with self.lock:
            stdin, stdout = cast(IO[bytes], self.process.stdin), cast(IO[bytes], self.process.stdout)
            try:
                stdin.write(json.dumps(request).encode() + b"\n")
                stdin.flush()
                said = read_until(stdout, b"\n", COMMAND_TIMEOUT_S)
            except (OSError, TimeoutError) as error:
                raise LinkError(f"the delay line did not answer {request}: {error}; {self.stderr_text()}") from None
        answer = json.loads(said) if said.strip() else {"ok": False, "error": "it has exited"}
        if not answer.get("ok"):
            raise LinkError(f"the delay line refused {request}: {answer.get('error')}; {self.stderr_text()}")
        return cast(dict[str, Any], answer)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            cast(IO[bytes], self.process.stdin).close()
        self.process.kill()
        self.process.wait()
        with contextlib.suppress(OSError):
            cast(IO[bytes], self.process.stdout).close()


# --- The link ---------------------------------------------------------------------------------------

class Link:
    """A built path: the client and server namespaces, the middle one with its delay line, and their settings."""

    client_host = CLIENT_HOST
    server_host = SERVER_HOST

    def __init__(self, spec: LinkSpec, how: str) -> None:
        self.spec = spec
        self.mode = how
        self.holders: dict[str, Holder] = {}
        self.rate_mbit: float | None = None  # the rate the tbf qdiscs hold now (None: there are none)
        self.middle = Holder(self._middle_argv())
        try:
            for side in SIDES:
                self.holders[side] = Holder(self._enter(self.middle.pid, user_only=True) + [tool("unshare"), "--net"]
                                            + python("-m", "iolab.delay_line", "--hold"))
            self._wire()
            self._apply(spec)
        except BaseException:
            self.close()
            raise

    def _middle_argv(self) -> list[str]:
        user = ["--user", "--map-root-user"] if self.mode == "user" else []
        return [tool("unshare"), *user, "--net", *python("-m", "iolab.delay_line")]

    def _enter(self, net_pid: int, user_only: bool = False) -> list[str]:
        """The nsenter prefix into the network namespace `net_pid` holds (and our user namespace, as a user)."""
        argv = [tool("nsenter")]
        if self.mode == "user":
            argv += [f"--user=/proc/{self.middle.pid}/ns/user", "--preserve-credentials"]
        if user_only:
            return argv + ["--"] if self.mode == "user" else []
        return argv + [f"--net=/proc/{net_pid}/ns/net", "--"]

    def argv(self, side: str, command: Sequence[object]) -> list[str]:
        """The argv that runs `command` inside `side`'s namespace ("client" or "server"), which it may then bind in."""
        holder = self._holder(side)
        return [*self._enter(holder.pid), "env", f"{LAB_NETNS_VARIABLE}={holder.netns}", *map(str, command)]

    def spawn(self, side: str, command: Sequence[object], **options: Any) -> "subprocess.Popen[bytes]":
        """children.spawn(`command`) inside `side`'s namespace: it dies with this process, like every child."""
        return spawn(self.argv(side, command), **options)

    def netns(self, side: str) -> str:
        """The identity of `side`'s network namespace, as /proc/self/ns/net reads inside it."""
        return self._holder(side).netns

    def _holder(self, side: str) -> Holder:
        if not self.holders:
            raise LinkError("this link is closed: build another (link.build or link.start)")
        if side not in self.holders:
            raise ParameterError(f"side must be one of {SIDES}, got {side!r}")
        return self.holders[side]

    def _run(self, net_pid: int, argv: list[str], script: str | None = None) -> None:
        """Run a tool inside a namespace; a LinkError with what it said if it fails."""
        command = self._enter(net_pid) + argv
        try:
            done = run(command, COMMAND_TIMEOUT_S, input=script)
        except (OSError, subprocess.TimeoutExpired) as error:
            raise LinkError(f"{' '.join(argv)} could not run: {error}") from None
        if done.returncode != 0:
            raise LinkError(f"{' '.join(argv)} failed: {(done.stderr or done.stdout).strip()}")

    def _wire(self) -> None:
        """Make the two veth pairs, address both sides, turn offloads off, and start the bridge."""
        middle = self.middle.pid
        self._run(middle, [tool("ip"), "-batch", "-"], script="".join(
            f"link add {MIDDLE_ENDS[side]} type veth peer name eth0 netns {self.holders[side].pid}\n"
            f"link set {MIDDLE_ENDS[side]} up promisc on\n" for side in SIDES))
        for side in SIDES:
            self._run(middle, [tool("ethtool"), "-K", MIDDLE_ENDS[side], *OFFLOADS])
            self._run(self.holders[side].pid, [tool("ip"), "-batch", "-"], script=self._side_script(side))
            self._run(self.holders[side].pid, [tool("ethtool"), "-K", "eth0", *OFFLOADS])
        self.middle.ask({"op": "attach", "a": MIDDLE_ENDS["client"], "b": MIDDLE_ENDS["server"]})

    @staticmethod
    def _side_script(side: str) -> str:
        other = "server" if side == "client" else "client"
        return "\n".join([
            "link set lo up",
            f"link set eth0 address {MACS[side]}",
            f"addr add {HOSTS[side]}/{PREFIX_LENGTH} dev eth0",
            "link set eth0 up",
            f"neigh replace {HOSTS[other]} lladdr {MACS[other]} dev eth0 nud permanent",
        ]) + "\n"

    def _apply(self, spec: LinkSpec) -> None:
        self.middle.ask({"op": "set", "delay_ms": spec.rtt_ms / 2, "loss": spec.loss_percent / 100})
        if spec.rate_mbit != self.rate_mbit:
            for side in SIDES:
                self._set_rate(self.holders[side].pid, spec.rate_mbit)
            self.rate_mbit = spec.rate_mbit
        self.spec = spec

    def _set_rate(self, net_pid: int, rate_mbit: float | None) -> None:
        if rate_mbit is None:
            self._run(net_pid, [tool("tc"), "qdisc", "del", "dev", "eth0", "root"])
            return
        burst = max(2 * 1514, int(rate_mbit * 1e6 / 8 / 1000))  # two frames, or a millisecond at the rate
        self._run(net_pid, [tool("tc"), "qdisc", "replace", "dev", "eth0", "root", "tbf", "rate", f"{rate_mbit}mbit",
                            "burst", str(burst), "latency", f"{TBF_LATENCY_MS}ms"])

    def set(self, **changes: Any) -> LinkSpec:
        """Change rtt_ms, loss_percent or rate_mbit (None removes the rate) between runs; the new LinkSpec."""
        unknown = set(changes) - {field.name for field in dataclasses.fields(LinkSpec)}
        if unknown:
            raise ParameterError(f"a link has rtt_ms, loss_percent and rate_mbit, not {sorted(unknown)}")
        self._apply(dataclasses.replace(self.spec, **changes))
        return self.spec

    def delay_line_usage(self) -> Usage:
        """The delay line's CPU seconds, frames read and frames dropped since the link was built."""
        answer = self.middle.ask({"op": "usage"})
        return Usage(float(answer["cpu_s"]), int(answer["packets"]), int(answer["dropped"]), int(answer["overflowed"]))

    def close(self) -> None:
        """Stop the holders and the delay line: the namespaces go with the last process inside them."""
        for holder in [*self.holders.values(), self.middle]:
            holder.close()
        self.holders.clear()
        with contextlib.suppress(ValueError):
            _built.remove(self)

    def __enter__(self) -> "Link":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Link {self.mode} {self.client_host} -> {self.server_host} {self.spec}>"


_built: list[Link] = []


def start(spec: LinkSpec | None = None) -> Link:
    """Build a link and return it, for a notebook whose link spans cells: close() it, or it goes at exit."""
    how = mode()
    if how is None:
        raise LinkError(f"cannot build a link here: {why_not()}")
    path = Link(spec or LinkSpec(), how)
    _built.append(path)
    return path


@contextlib.contextmanager
def build(spec: LinkSpec | None = None) -> Iterator[Link]:
    """`with build(LinkSpec(rtt_ms=40)) as path:` builds a link and removes it however the block ends."""
    path = start(spec)
    try:
        yield path
    finally:
        path.close()


@atexit.register
def _close_all() -> None:
    for path in list(_built):
        path.close()
