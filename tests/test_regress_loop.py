"""benchmarks/regress_loop.py reads a failed papermill run into its lesson, cell and values.

A real tiny notebook, run by papermill with a parameter that makes its assertion fail.
"""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[1]


def load_benchmark():
    spec = importlib.util.spec_from_file_location("regress_loop", REPO / "benchmarks" / "regress_loop.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


regress_loop = load_benchmark()


def tiny_notebook(path):
    notebook = nbformat.v4.new_notebook()
    parameters = nbformat.v4.new_code_cell("share = 0.5\nquick = False")
    parameters.metadata["tags"] = ["parameters"]
    notebook.cells = [
        nbformat.v4.new_markdown_cell("# A lesson that checks one share"),
        nbformat.v4.new_code_cell("import math"),
        parameters,
        nbformat.v4.new_code_cell("least = 0.95\nprint(share)"),
        nbformat.v4.new_code_cell(
            "# the claim\nassert share >= least, f\"held {share:.1%}, under {least:.1%} at 1,024 users (q1)\""),
        nbformat.v4.new_code_cell("print('never reached')"),
    ]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, path)


@pytest.mark.timeout(120)
def test_a_failed_papermill_run_is_read_into_its_cell_and_values(tmp_path):
    source, executed = tmp_path / "99-tiny.ipynb", tmp_path / "out.ipynb"
    tiny_notebook(source)
    done = subprocess.run(
        [sys.executable, "-m", "papermill", "-k", "python3", "--no-progress-bar", "-p", "share", "0.928",
         str(source), str(executed)], capture_output=True, text=True, timeout=110)
    assert done.returncode != 0, done.stdout + done.stderr
    failure = regress_loop.failure_of(json.loads(executed.read_text()), done.stderr)
    # The source notebook's index: papermill's injected parameters and error cells are left out.
    assert failure["cell"] == 4
    assert failure["first_line"] == "# the claim"
    assert failure["error"] == "AssertionError"
    assert failure["message"] == "held 92.8%, under 95.0% at 1,024 users (q1)"
    assert failure["values"] == pytest.approx([0.928, 0.95, 1024.0])


def test_a_run_that_stopped_before_any_cell_keeps_the_logs_last_lines():
    failure = regress_loop.failure_of({}, "starting\nsomething\nNo such kernel named python3\n")
    assert failure["cell"] is None
    assert failure["message"].endswith("No such kernel named python3")


def test_numbers_in_a_message_leave_names_out():
    assert regress_loop.numbers_in("tornado_app2 at 200 users: 44% busy, not >= 0.8 (q3, -1.5e-3)") == \
        pytest.approx([200.0, 0.44, 0.8, -1.5e-3])


def test_claim_lines_are_tallied_by_claim_whatever_their_figures():
    def executed(*lines):
        return {"cells": [{"cell_type": "code", "outputs": [{"output_type": "stream", "text": "\n".join(lines)}]}]}

    first = executed("✓ tornado_push ws: the last of 800 at N × D: 17.7 ms within [11.6, 25.4] ms",
                     "– your browser received every message: skipped, no browser here",
                     "All 2 of this lesson's claims hold on this run.")
    second = executed("✗ tornado_push ws: the last of 800 at N × D: 31.0 ms, outside [11.6, 25.4] ms",
                      "– your browser received every message: skipped, no browser here")
    third = executed("⚠ tornado_push ws: the last of 800 at N × D: not judged: tornado_push ws: 40.0 ms, outside"
                     " [11.6, 25.4] ms; others held the CPUs 60% of this run")
    assert regress_loop.claim_lines(first)[0] == ("✓", "tornado_push ws: the last of # at N × D", 0.373)
    runs = [{"lessons": [{"lesson": "12-long", "claims": regress_loop.claim_lines(nb)}]} for nb in (first, second, third)]
    counts = regress_loop.tally(runs)["12-long"]
    assert counts["tornado_push ws: the last of # at N × D"] == {"judged": 2, "failed": 1, "excused": 1, "skipped": 0,
                                                                 "widest_band": 0.373}
    assert counts["your browser received every message"] == {"judged": 0, "failed": 0, "excused": 0, "skipped": 2,
                                                               "widest_band": None}


def test_a_bands_width_is_read_against_its_named_prediction_or_its_middle():
    width = regress_loop.band_width
    assert width("✓ a: 10.0 ms within [5.0, 15.0] ms") == 0.5  # no prediction named: the band's middle
    assert width("✓ a (model 8.0 req/s, ±2%): 8.1 req/s within [7.0, 9.0] req/s") == 0.125
    assert width("✗ a: measured 9, predicted 4: 9.0 ms, outside [2.0, 12.0] ms") == 1.25
    assert width("✓ a: at most 12 ms: 9.0 ms within [0.0, 12.0] ms") is None  # an upper bound
    assert width("✓ a: 404 ms within (224, ∞) ms, nearer the predicted 405 than 44") is None  # picks the nearer
    assert width("✓ a: 404 ms within [400, ∞) ms") is None  # a bound open on one side
    counts = {"l": {"c": {"widest_band": 0.8}, "d": {"widest_band": 0.4}, "e": {"widest_band": None},
                    "X between two laws": {"widest_band": 0.9}}}
    assert regress_loop.wide_bands(counts) == [("l", "c", 0.8)]
    assert regress_loop.wide_bands(counts, stated=True) == [("l", "X between two laws", 0.9)]
