"""Full-size lessons run in JupyterLab, one after another, against the time each lesson's header states.

Starts JupyterLab and headless Chromium as the browser test does (its harness,
from tests/), opens each lesson, sets `solutions = True` in the page (as a
student who has answered every question; the notebook on disk is never saved),
runs all cells at full size and times Run All until the kernel is idle. Each
lesson's header says "running every cell takes about ..."; the ratio of the
measured time to that is the figure, and within 20% is the goal. The last line
printed is JSON: {"lessons": {...}, "all_within_20_percent": ...}.

    .venv/bin/python benchmarks/lessons_in_jupyterlab.py [--lessons 00 01 02 03 04 05]
"""

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

import browser_lab  # noqa: E402  (the browser test's harness: tests/ is not a package)
import test_browser  # noqa: E402

TOLERANCE = 0.2
WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}
STATED = re.compile(r"running every cell takes about ([\w½¼¾ ]+?) (seconds|minutes?)\b")
SOLUTIONS_JS = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  for (const cell of panel.content.widgets) {
    const source = cell.model.sharedModel.getSource();
    if (/^solutions\\s*=\\s*False/m.test(source)) {
      cell.model.sharedModel.setSource(source.replace(/^solutions\\s*=\\s*False/m, 'solutions = True'));
      return true;
    }
  }
  return false;
}"""


class FullSizeLab(browser_lab.Lab):
    """The browser test's JupyterLab, without IOLAB_QUICK: every lesson at the sizes a student runs."""

    def environment(self):
        env = super().environment()
        env.pop("IOLAB_QUICK", None)
        return env


def stated_seconds(path):
    """The time the lesson's header states for running every cell, in seconds (None if it states none)."""
    header = "".join(json.loads(path.read_text())["cells"][0]["source"])
    match = STATED.search(header.replace("\n", " "))
    if not match:
        return None
    amount, unit = match.groups()
    amount = amount.strip().lower()
    if amount in WORDS:
        number = WORDS[amount]
    elif amount.endswith("and a half") and amount.split()[0] in WORDS:
        number = WORDS[amount.split()[0]] + 0.5
    else:
        whole = re.match(r"\d*", amount).group()
        number = float(whole or 0) + {"½": 0.5, "¼": 0.25, "¾": 0.75}.get(amount[len(whole):].strip(), 0.0)
    return number * (60 if unit.startswith("minute") else 1)


def run_lesson(lab, context, path):
    page = context.new_page()
    lesson = test_browser.LessonInBrowser(page, lab, path, screenshots=REPO / "build" / "browser-full")
    try:
        test_browser.open_lab(lab, page, path)
        lesson.open()
        if not page.evaluate(SOLUTIONS_JS):
            lesson.fail("no `solutions = False` line found in the parameters cell")
        lesson.run_all()
        lesson.check_cells()
        lesson.shut_down_kernel()
    finally:
        lesson.close()
        page.close()
        for kernel in lab.kernels():
            kernel.kill()
    return lesson.timings.get("run all"), lesson.problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lessons", nargs="+", default=["00", "01", "02", "03", "04", "05"],
                        help="lesson numbers, run in this order")
    parser.add_argument("--run-all-timeout", type=float, default=900.0, help="seconds one lesson's Run All may take")
    args = parser.parse_args()
    missing = browser_lab.missing_browser_tools()
    if missing:
        print(json.dumps({"skipped": missing}))
        return
    paths = [next((REPO / "notebooks").glob(f"{number}-*.ipynb")) for number in args.lessons]
    test_browser.RUN_ALL_TIMEOUT_S = args.run_all_timeout  # full sizes take minutes, not the quick mode's seconds

    from playwright.sync_api import sync_playwright

    figures = {}
    with tempfile.TemporaryDirectory() as home:
        lab = FullSizeLab(home).spawn()
        try:
            with sync_playwright() as playwright:
                chromium = browser_lab.launch_chromium(playwright)
                context = chromium.new_context(viewport={"width": 1280, "height": 900})
                lab.wait_ready()
                for path in paths:
                    began = time.monotonic()
                    run_all_s, problems = run_lesson(lab, context, path)
                    stated_s = stated_seconds(path)
                    ratio = run_all_s / stated_s if run_all_s and stated_s else None
                    figures[path.stem] = {
                        "run_all_s": None if run_all_s is None else round(run_all_s, 1),
                        "stated_s": stated_s,
                        "ratio": None if ratio is None else round(ratio, 2),
                        "within_20_percent": ratio is not None and abs(ratio - 1) <= TOLERANCE,
                        "problems": problems,
                    }
                    print(f"{path.stem}: Run All {run_all_s or float('nan'):.1f} s, header says {stated_s} s"
                          f" ({time.monotonic() - began:.0f} s with opening and closing); problems: {problems or 'none'}",
                          flush=True)
                chromium.close()
        finally:
            lab.stop()
    print(json.dumps({
        "lessons": figures,
        "all_within_20_percent": all(figure["within_20_percent"] for figure in figures.values()),
        "no_problems": not any(figure["problems"] for figure in figures.values()),
    }))


if __name__ == "__main__":
    main()
