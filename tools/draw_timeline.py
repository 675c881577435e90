"""Draw lesson 00's timeline of one thread serving blocking against non-blocking handlers, as an SVG.

The SVG is committed (notebooks/figures/one-thread-timeline.svg), so a student sees it before any run, and
tests/test_draw_timeline.py holds it to what this script draws. It is drawn from the handlers' code, not from a run.

    python tools/draw_timeline.py          # rewrite the SVG
"""

import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "notebooks" / "figures" / "one-thread-timeline.svg"
LEFT, PX_PER_S, ROW, GAP, END_S = 150, 400, 20, 6, 1.6
CPU, BLOCKED, TIMER, QUEUED, FREE, ANSWER = "#333333", "#e07b39", "#93c47d", "#d9d9d9", "#eef5fb", "#1f77b4"
WAIT_S, REQUESTS = 0.5, 3
SLIVER_S = 0.015  # a request's CPU: far less in truth, drawn this wide so that it shows


class Drawing:
    """SVG elements on a time axis: seconds map to pixels from LEFT."""

    def __init__(self):
        self.elements = []

    @staticmethod
    def x(seconds):
        return LEFT + seconds * PX_PER_S

    def bar(self, start_s, end_s, y, colour):
        # White edges keep CPU slivers that touch apart.
        edge = ' stroke="white" stroke-width="1"' if colour == CPU else ""
        self.elements.append(f'<rect x="{self.x(start_s):.1f}" y="{y}" width="{(end_s - start_s) * PX_PER_S:.1f}" '
                             f'height="{ROW}" fill="{colour}"{edge}/>')

    def text(self, x, y, words, anchor="start", size=13, bold=False):
        self.elements.append(f'<text x="{x:.1f}" y="{y}" text-anchor="{anchor}" font-size="{size}" '
                             f'font-weight="{"bold" if bold else "normal"}">{words}</text>')

    def answer(self, seconds, y):
        self.elements.append(f'<circle cx="{self.x(seconds):.1f}" cy="{y + ROW / 2}" r="4" fill="{ANSWER}"/>')

    def axis(self, y):
        self.elements.append(f'<line x1="{self.x(0)}" y1="{y}" x2="{self.x(END_S)}" y2="{y}" stroke="#888"/>')
        for seconds in (0, 0.5, 1.0, 1.5):
            self.elements.append(f'<line x1="{self.x(seconds)}" y1="{y}" x2="{self.x(seconds)}" y2="{y + 4}" stroke="#888"/>')
            self.text(self.x(seconds), y + 16, f"{seconds:g} s", "middle", 11)

    def panel(self, top, title, blocking):
        """One handler: the server's thread on top, a row per request below; returns where the next panel starts."""
        self.text(10, top, title, size=14, bold=True)
        thread_y = top + 12
        self.text(10, thread_y + 15, "the server's thread")
        rows = [thread_y + (ROW + GAP) * (i + 1) for i in range(REQUESTS)]
        if blocking:
            # time.sleep holds the thread: each request's wait starts when the one before it has ended.
            for i in range(REQUESTS):
                start = i * WAIT_S
                self.bar(start, start + SLIVER_S, thread_y, CPU)
                self.bar(start + SLIVER_S, start + WAIT_S, thread_y, BLOCKED)
                self.text(self.x(start + WAIT_S / 2), thread_y + 15, f"time.sleep, request {i + 1}", "middle", 11)
        else:
            # The thread reads each request and sets a timer, then waits in the event loop until the timers fire.
            self.bar(REQUESTS * SLIVER_S, WAIT_S, thread_y, FREE)
            self.bar(WAIT_S + REQUESTS * SLIVER_S, END_S, thread_y, FREE)
            self.text(self.x(0.27), thread_y + 15, "free: the event loop waits", "middle", 11)
            for i in range(REQUESTS):
                self.bar(i * SLIVER_S, (i + 1) * SLIVER_S, thread_y, CPU)
                self.bar(WAIT_S + i * SLIVER_S, WAIT_S + (i + 1) * SLIVER_S, thread_y, CPU)
        for i, y in enumerate(rows):
            self.text(10, y + 15, f"request {i + 1}")
            if blocking:
                if i:
                    self.bar(0, i * WAIT_S, y, QUEUED)
                self.bar(i * WAIT_S, (i + 1) * WAIT_S, y, BLOCKED)
                self.answer((i + 1) * WAIT_S + SLIVER_S, y)
            else:
                self.bar((i + 1) * SLIVER_S, WAIT_S, y, TIMER)
                self.answer(WAIT_S + (i + 1) * SLIVER_S, y)
        self.axis(rows[-1] + ROW + 6)
        return rows[-1] + ROW + 40

    def legend(self, top):
        keys = [(CPU, "the thread runs Python (CPU)"), (BLOCKED, "the thread is blocked in time.sleep"),
                (TIMER, "a timer runs, the thread is free"), (QUEUED, "the request waits for the thread")]
        for i, (colour, words) in enumerate(keys):
            x, y = 10 + (i % 2) * 380, top + 4 + (i // 2) * 22
            self.elements.append(f'<rect x="{x}" y="{y}" width="14" height="14" fill="{colour}"/>')
            self.text(x + 20, y + 12, words, size=12)
        self.elements.append(f'<circle cx="17" cy="{top + 55}" r="4" fill="{ANSWER}"/>')
        self.text(30, top + 60, "the request's answer leaves", size=12)
        return top + 70


def draw():
    """The SVG's text."""
    drawing = Drawing()
    below = drawing.panel(24, f"Blocking: time.sleep({WAIT_S:g}) in each of {REQUESTS} requests", blocking=True)
    below = drawing.panel(below + 10, f"Non-blocking: await asyncio.sleep({WAIT_S:g}) in each of {REQUESTS} requests",
                          blocking=False)
    height = drawing.legend(below)
    width = round(LEFT + END_S * PX_PER_S + 20)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" font-family="sans-serif">\n'
            "<title>One thread serving three requests: blocking against non-blocking handlers</title>\n"
            '<rect width="100%" height="100%" fill="white"/>\n' + "\n".join(drawing.elements) + "\n</svg>\n")


def main(argv):
    if len(argv) > 1:
        sys.exit(__doc__.strip())
    OUT.write_text(draw())
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main(sys.argv)
