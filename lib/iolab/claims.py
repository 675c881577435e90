"""A lesson's closing claims: each one checked against this run's bounds, printed on a line of its own."""

import math

HOLDS, FAILS, SKIPPED = "✓", "✗", "–"


class ClaimsFailed(AssertionError):
    """One or more of a lesson's claims did not hold on this run; the message names every one with its values."""


class Claims:
    """Collects claims as a lesson's module checks them, then prints them all and fails on any that did not hold.

    Every claim is checked and printed, even after one fails, so a student sees the whole run's verdict; the
    failure raised at the end carries each failed claim's own message (the values that broke it).
    """

    def __init__(self, lesson):
        self.lesson = lesson
        self.rows = []  # (mark, claim, measured, bounds, message)

    def check(self, claim, holds, measured="", bounds="", message=""):
        """Record `claim` (what the lesson said) with what this run measured and the bounds it was held to."""
        self.rows.append((HOLDS if holds else FAILS, claim, measured, bounds, "" if holds else (message or claim)))
        return bool(holds)

    def within(self, claim, value, lowest, highest, unit="", digits=1, message=""):
        """A claim that `value` lies in [lowest, highest]: the common case, with the figures written for it."""
        holds = not math.isnan(value) and lowest <= value <= highest
        fmt = f"{{:.{digits}f}}"
        measured = fmt.format(value) + (f" {unit}" if unit else "")
        bounds = f"[{fmt.format(lowest)}, {fmt.format(highest)}]" + (f" {unit}" if unit else "")
        return self.check(claim, holds, measured, bounds, message or f"{claim}: {measured}, outside {bounds}")

    def nearer(self, claim, measured, right, wrong, unit="", spec=".4g"):
        """A claim that `measured` lies nearer `right` (its prediction) than `wrong` (the opposite one)."""
        unit = f" {unit}" if unit else ""
        middle = format((right + wrong) / 2, spec)
        side = f"({middle}, ∞)" if right > wrong else f"(-∞, {middle})"
        measured_, right_, wrong_ = (format(v, spec) for v in (measured, right, wrong))
        return self.check(claim, abs(measured - right) < abs(measured - wrong), f"{measured_}{unit}",
                          f"{side}{unit}, nearer the predicted {right_} than {wrong_}",
                          f"{claim}: measured {measured_}{unit}, predicted {right_}{unit}, the opposite {wrong_}{unit}")

    def skip(self, claim, reason):
        """A claim this run could not check (a tool missing, a part not run), with the reason."""
        self.rows.append((SKIPPED, claim, "", "", reason))

    def failed(self):
        return [row for row in self.rows if row[0] == FAILS]

    def lines(self):
        """One line per claim: the mark, the claim, what was measured and the bounds (or why it was skipped)."""
        out = []
        for mark, claim, measured, bounds, message in self.rows:
            if mark == SKIPPED:
                out.append(f"{mark} {claim}: skipped, {message}")
                continue
            figures = measured + (f" within {bounds}" if bounds and mark == HOLDS else "")
            figures += f", outside {bounds}" if bounds and mark == FAILS else ""
            out.append(f"{mark} {claim}" + (f": {figures}" if figures else ""))
        return out

    def report(self):
        """Print every claim, then raise ClaimsFailed naming each that failed, or return the number that held."""
        for line in self.lines():
            print(line)
        failed = self.failed()
        if failed:
            raise ClaimsFailed(f"{self.lesson}: {len(failed)} of {len(self.rows)} claims failed on this run:\n- "
                               + "\n- ".join(message for *_, message in failed))
        held = sum(row[0] == HOLDS for row in self.rows)
        skipped = len(self.rows) - held
        print(f"All {held} of this lesson's claims hold on this run."
              + (f" ({skipped} skipped)" if skipped else ""))
        return held


class ClaimFirst(Claims):
    """Claims whose failure messages open with the claim, then the values that broke it (lessons 07 and 08)."""

    def check(self, claim, holds, measured="", bounds="", message=""):
        return super().check(claim, holds, measured, bounds, f"{claim}: {message}" if message else "")
