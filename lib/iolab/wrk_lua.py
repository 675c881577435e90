"""wrk driven by Lua scripts that pipeline.

Each connection sends `depth` requests in one write, and may check every answer's body in order.
"""

import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from .benchtools import parse_wrk, wrk_output
from .contract import check_loopback, find_program

_ORDER_LINE = re.compile(r"^ORDER checked (\d+) wrong (\d+)$", re.MULTILINE)


def lua_string(text: str) -> str:
    """A Python string as a Lua string literal."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    return f'"{escaped}"'


def pipeline_script(paths: Sequence[str], expected_bodies: Sequence[str] | None = None) -> str:
    """Lua for wrk: every connection sends `paths` as one batch, in one write, and the next batch once all are answered.

    wrk sends a connection's next batch only after it has parsed an answer for
    every request in the last one, so `len(paths)` is the pipeline depth. With
    `expected_bodies`, every answer's body is compared with the one expected at
    its place in the batch, and wrk prints `ORDER checked N wrong M` at the end.
    Answers of different connections interleave in one wrk thread, so the check
    needs one connection per thread (wrk -tN -cN).
    """
    if not paths:
        raise ValueError("paths must name at least one request")
    if expected_bodies is not None and len(expected_bodies) != len(paths):
        raise ValueError(f"expected_bodies must have one body per path: {len(expected_bodies)} for {len(paths)}")
    lines = [
        "local paths = {" + ", ".join(lua_string(path) for path in paths) + "}",
        "init = function(args)",
        "  local batch = {}",
        "  for i, path in ipairs(paths) do batch[i] = wrk.format(nil, path) end",
        "  pipelined = table.concat(batch)",
        "end",
        "request = function() return pipelined end",
    ]
    if expected_bodies is not None:
        lines += [
            "local expected = {" + ", ".join(lua_string(body) for body in expected_bodies) + "}",
            "local threads = {}",
            "setup = function(thread) table.insert(threads, thread) end",
            "position, checked, wrong = 0, 0, 0",
            "response = function(status, headers, body)",
            "  position = position % #expected + 1",
            "  checked = checked + 1",
            "  if body ~= expected[position] then wrong = wrong + 1 end",
            "end",
            "done = function(summary, latency, requests)",
            "  local all_checked, all_wrong = 0, 0",
            "  for _, thread in ipairs(threads) do",
            "    all_checked = all_checked + thread:get('checked')",
            "    all_wrong = all_wrong + thread:get('wrong')",
            "  end",
            "  io.write(string.format('ORDER checked %d wrong %d\\n', all_checked, all_wrong))",
            "end",
        ]
    return "\n".join(lines) + "\n"


def parse_order(text: str) -> tuple[int, int] | None:
    """(answers checked, answers out of order or wrong) from wrk's output, or None if the script did not check."""
    match = _ORDER_LINE.search(text)
    return (int(match.group(1)), int(match.group(2))) if match else None


def run_pipelined(
    url: str,
    paths: Sequence[str],
    connections: int,
    duration_s: float,
    *,
    script_path: str,
    expected_bodies: Sequence[str] | None = None,
    threads: int = 1,
    timeout_s: float = 10,
) -> dict[str, Any]:
    """wrk pipelining `paths` on every connection for `duration_s`: its report, plus depth and the order check.

    `script_path` is where the Lua script is written (a temporary file of the caller's).
    """
    check_loopback(urlsplit(url).hostname or "")
    if not 1 <= threads <= connections:
        raise ValueError(f"threads must be between 1 and connections ({connections}), got {threads}")
    if expected_bodies is not None and threads != connections:
        raise ValueError("checking the order needs one connection per wrk thread (threads == connections)")
    if find_program("wrk") is None:
        raise FileNotFoundError("wrk is not installed (Debian package wrk)")
    with open(script_path, "w") as script:
        script.write(pipeline_script(paths, expected_bodies))
    output = wrk_output(url, connections, duration_s, threads=threads, script=script_path, timeout_s=timeout_s)
    report = parse_wrk(output)
    report["depth"] = len(paths)
    order = parse_order(output)
    report["checked"], report["order_errors"] = order if order else (None, None)
    report["output"] = output
    return report
