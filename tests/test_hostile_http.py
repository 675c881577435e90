"""Every server in the registry against malformed and adversarial requests, judged by h11: the lab's own must be strict."""

import socket
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from iolab import hostile, registry, servers, tables

MUTATIONS = 60  # CI's share of random mutations; benchmarks/hostile_http.py tries many more
SEED = 26
CASES = hostile.corpus(mutations=MUTATIONS, seed=SEED)
CONTROLS = [case for case in CASES if case.name.startswith("valid")]
_reports = {}


@pytest.fixture(scope="module", autouse=True)
def print_the_table(request):
    """After the last server, print every server's line (third-party leniency is recorded here, not failed)."""
    yield
    if not _reports:
        return
    table = tables.markdown(hostile.TABLE_HEADERS, hostile.table_rows(_reports.values())).data
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():  # shown in every run, not only when a test fails
            reporter.write_line(f"\nhostile HTTP, {len(CASES)} cases per server (h11 the reference):\n{table}")


def test_the_reference_refuses_what_the_corpus_says_it_should():
    by_name = {case.name: case for case in CASES}
    assert hostile.reference(by_name["valid GET"].data) == hostile.Verdict(1, "incomplete")
    assert hostile.reference(by_name["valid pipelined pair"].data).accepted == 2
    for name in ["space before the colon", "two different Content-Lengths", "NUL in a header value",
                 "chunk size not hex", "missing Host (HTTP/1.1)", "binary garbage (512 bytes)"]:
        assert hostile.reference(by_name[name].data).ending == "rejected", name
    # A request hidden in a GET's body is one request to h11; a server that answers two was smuggled.
    assert hostile.reference(by_name["body on a GET hides a request"].data).accepted == 1
    # The mutations are seeded: the same seed gives the same corpus.
    assert hostile.mutated_cases(5, seed=SEED) == hostile.mutated_cases(5, seed=SEED)
    assert hostile.mutated_cases(5, seed=SEED) != hostile.mutated_cases(5, seed=SEED + 1)


def test_answers_are_told_apart_by_content_length():
    raw = (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nHTTP/"
           b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\nwhatever")
    assert hostile.statuses(raw) == [200, 400]
    assert hostile.statuses(b"") == [] and hostile.statuses(b"\x15\x03\x01") == []


class AnswersAnything:
    """A server that answers 200 to whatever arrives: the fuzz must call it lenient, or it would miss real ones."""

    name = "answers_anything"

    def __init__(self):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.host, self.port = self.listener.getsockname()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def alive(self):
        return True

    def serve(self):
        while True:
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            with sock:
                sock.settimeout(1.0)
                try:
                    if sock.recv(65536):
                        sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                except OSError:
                    pass


def test_the_fuzz_catches_a_server_that_answers_anything():
    lenient = AnswersAnything()
    try:
        report = hostile.fuzz(lenient, hostile.fixed_cases()[:20], workers=2)
    finally:
        lenient.listener.close()
    assert report.lenient and not report.crashed and not report.deaf_after, report.row()
    assert "space before the colon" in [name for name, _ in report.lenient]


SERVERS_AT_ONCE = 4  # servers fuzzed side by side: each case waits on its server, not on the CPU (44 s -> ~15 s)


def fuzz_one(name):
    """(report, the control cases' outcomes) for one registry server, started and stopped here."""
    with servers.serve(name) as server:
        report = hostile.fuzz(server, CASES)
        controls = [hostile.send_case(server.host, server.port, case.data) for case in CONTROLS]
        server.check()  # raises, with its stderr, if a case killed it
    return report, controls


@pytest.fixture(scope="module")
def fuzzed():
    """Every available HTTP server of the registry fuzzed, SERVERS_AT_ONCE at a time: {name: (report, controls) or the
    exception it raised}. Each case still runs against one server with its own bound; only the waits overlap."""
    names = [name for name in hostile.http_servers() if not registry.get(name).missing()]
    results = {}
    with ThreadPoolExecutor(max_workers=SERVERS_AT_ONCE, thread_name_prefix="fuzzed") as pool:
        futures = {name: pool.submit(fuzz_one, name) for name in names}
        for name, future in futures.items():
            try:
                results[name] = future.result()
            except Exception as error:  # noqa: BLE001 - reported by that server's own test
                results[name] = error
    return results


@pytest.mark.parametrize("name", hostile.http_servers())
def test_server_against_hostile_requests(name, fuzzed):
    reason = registry.get(name).missing()
    if reason:
        pytest.skip(reason)
    if isinstance(fuzzed[name], Exception):
        raise fuzzed[name]
    report, controls = fuzzed[name]
    _reports[name] = report
    # The harness saw answers: every server answers the valid requests (else "no lenient 2xx" means nothing).
    assert all(outcome.statuses and outcome.statuses[0] == 200 for outcome in controls), (name, controls)
    assert report.tried == len(CASES)
    # Every server, ours or not: nothing kills it, and a fresh client is served after every case.
    assert not report.crashed, report.row()
    assert not report.deaf_after, report.row()
    if name in hostile.OWN_HTTP:
        # The lab's own: a 4xx or a close for every case h11 refuses, within the bound, never a 2xx.
        assert not report.lenient, report.lenient
        assert not report.hung, report.row()
