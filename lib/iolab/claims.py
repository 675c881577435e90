"""A lesson's closing claims: each one checked against this run's bounds, printed on a line of its own."""

import math
from typing import Any

HOLDS, FAILS, SKIPPED, EXCUSED = "✓", "✗", "–", "⚠"


class ClaimsFailed(AssertionError):
    """One or more of a lesson's claims did not hold on this run; the message names every one with its values."""


def others_explain(others: float | None, value: float, lowest: float, highest: float, slower: str = "above",
                   predicted: float | None = None) -> str:
    """Why a timing figure outside [lowest, highest] is no verdict on the model, or "" where it is one. Others that
    held the CPUs a share o of the run can only slow it: stretch a time by up to o / (1 − o), or cut a rate by up to
    o. They explain a miss on the slow side no larger than that, where o is also more than the claim's margin: its
    band's half-width over its middle or, given the figure the model `predicted`, the slack from that prediction to
    the bound on the slow side (the only margin a bound open on one side has)."""
    if others is None or others <= 0 or not math.isfinite(value):
        return ""
    margin = _margin(lowest, highest, slower, predicted)
    if slower == "above":
        miss, most = (value - highest) / highest if highest > 0 else math.inf, others / max(1e-9, 1 - others)
    else:
        miss, most = (lowest - value) / lowest if lowest > 0 else math.inf, others
    if others <= margin or miss <= 0 or miss > most:
        return ""
    return (f"others held the CPUs {others:.0%} of this run, more than the claim's margin of {margin:.0%}, enough"
            f" to explain a miss of {miss:.0%}: rerun it when the machine is quieter")


def _margin(lowest: float, highest: float, slower: str, predicted: float | None) -> float:
    """How far a claim's slow-side bound lies from what it expects, as a share of that: disturbance it absorbs."""
    if predicted is not None and math.isfinite(predicted) and predicted > 0:
        slack = highest - predicted if slower == "above" else predicted - lowest
        return max(0.0, slack / predicted)
    middle = (highest + lowest) / 2
    return (highest - lowest) / 2 / middle if math.isfinite(highest) and middle > 0 else math.inf


class Claims:
    """Collects claims as a lesson's module checks them, then prints them all and fails on any that did not hold.

    Every claim is checked and printed, even after one fails, so a student sees the whole run's verdict; the
    failure raised at the end carries each failed claim's own message (the values that broke it).
    """

    def __init__(self, lesson: str) -> None:
        self.lesson = lesson
        self.rows: list[tuple[str, str, str, str, str]] = []  # (mark, claim, measured, bounds, message)

    def check(self, claim: str, holds: Any, measured: str = "", bounds: str = "", message: str = "") -> bool:
        """Record `claim` (what the lesson said) with what this run measured and the bounds it was held to."""
        self.rows.append((HOLDS if holds else FAILS, claim, measured, bounds, "" if holds else (message or claim)))
        return bool(holds)

    def within(
        self,
        claim: str,
        value: float,
        lowest: float,
        highest: float,
        *,
        unit: str = "",
        digits: int = 1,
        message: str = "",
    ) -> bool:
        """A claim that `value` lies in [lowest, highest]: the common case, with the figures written for it."""
        holds = not math.isnan(value) and lowest <= value <= highest
        fmt = f"{{:.{digits}f}}"
        measured = fmt.format(value) + (f" {unit}" if unit else "")
        bounds = f"[{fmt.format(lowest)}, {fmt.format(highest)}]" + (f" {unit}" if unit else "")
        return self.check(claim, holds, measured, bounds, message or f"{claim}: {measured}, outside {bounds}")

    def nearer(self, claim: str, measured: float, right: float, wrong: float, unit: str = "", spec: str = ".4g", *,
               neighbours: Any = None, slower: str | None = None) -> bool:
        """A claim that `measured` lies nearer `right` (its prediction) than `wrong` (the opposite one). Given the
        run's `neighbours` and which way is `slower` ("above" for a time, "below" for a rate), a miss on the slow
        side that others explain is excused, as timing() excuses one."""
        unit_ = f" {unit}" if unit else ""
        middle = (right + wrong) / 2
        side = f"({format(middle, spec)}, ∞)" if right > wrong else f"(-∞, {format(middle, spec)})"
        measured_, right_, wrong_ = (format(v, spec) for v in (measured, right, wrong))
        if self.check(claim, abs(measured - right) < abs(measured - wrong), f"{measured_}{unit_}",
                      f"{side}{unit_}, nearer the predicted {right_} than {wrong_}",
                      f"{claim}: measured {measured_}{unit_}, predicted {right_}{unit_}, the opposite {wrong_}{unit_}"):
            return True
        # Only a bound on the slow side can be missed because others held the CPUs: the prediction is the faster one.
        if (slower == "below" and right > wrong) or (slower == "above" and right < wrong):
            lowest, highest = (middle, math.inf) if right > wrong else (-math.inf, middle)
            self._excuse_last(neighbours, measured, lowest, highest, slower, right)
        return False

    def timing(self, claim: str, value: float, lowest: float, highest: float, *, neighbours: Any = None,
               unit: str = "", digits: int = 1, message: str = "", slower: str = "above",
               predicted: float | None = None) -> bool:
        """A claim about time, judged as within(); but one that fails on its slow side (`slower`: "above" for a
        time, "below" for a rate) while others held the CPUs is excused, with the figures, where they explain the
        miss (others_explain). `neighbours`: the run's iolab.neighbours.Neighbours, or its as_dict(). On a quiet run
        it changes nothing, and a miss on the fast side, or larger than the neighbours explain, still fails. A bound
        open on one side passes the model's `predicted` figure, so its margin is that figure's slack to the bound."""
        if self.within(claim, value, lowest, highest, unit=unit, digits=digits, message=message):
            return True
        self._excuse_last(neighbours, value, lowest, highest, slower, predicted)
        return False

    def _excuse_last(self, neighbours: Any, value: float, lowest: float, highest: float, slower: str,
                     predicted: float | None) -> None:
        """Turn the claim just failed into an excused one where the run's neighbours explain its miss."""
        others = neighbours.get("others_share") if isinstance(neighbours, dict) else getattr(
            neighbours, "others_share", None)
        reason = others_explain(others, value, lowest, highest, slower, predicted)
        if reason:
            mark, claim, measured, bounds, failure = self.rows.pop()
            self.excused(claim, measured, bounds, f"{failure}; {reason}")

    def excused(self, claim: str, measured: str, bounds: str, reason: str) -> None:
        """A claim this run could not judge because other programs held the CPUs: its figures, and theirs."""
        self.rows.append((EXCUSED, claim, measured, bounds, reason))

    def skip(self, claim: str, reason: str) -> None:
        """A claim this run could not check (a tool missing, a part not run), with the reason."""
        self.rows.append((SKIPPED, claim, "", "", reason))

    def failed(self) -> list[tuple[str, str, str, str, str]]:
        return [row for row in self.rows if row[0] == FAILS]

    def lines(self) -> list[str]:
        """One line per claim: the mark, the claim, what was measured and the bounds (or why it was skipped)."""
        out: list[str] = []
        for mark, claim, measured, bounds, message in self.rows:
            if mark == SKIPPED:
                out.append(f"{mark} {claim}: skipped, {message}")
                continue
            if mark == EXCUSED:
                out.append(f"{mark} {claim}: not judged: {message}")
                continue
            figures = measured + (f" within {bounds}" if bounds and mark == HOLDS else "")
            figures += f", outside {bounds}" if bounds and mark == FAILS else ""
            out.append(f"{mark} {claim}" + (f": {figures}" if figures else ""))
        return out

    def report(self, notes: list[str] | None = None) -> int:
        """Print the `notes` (figures a lesson shows beside its claims), every claim, then raise ClaimsFailed naming
        each that failed, or return the number that held."""
        for line in [*(notes or []), *self.lines()]:
            print(line)
        failed = self.failed()
        if failed:
            raise ClaimsFailed(f"{self.lesson}: {len(failed)} of {len(self.rows)} claims failed on this run:\n- "
                               + "\n- ".join(message for *_, message in failed))
        held = sum(row[0] == HOLDS for row in self.rows)
        excused = sum(row[0] == EXCUSED for row in self.rows)
        skipped = len(self.rows) - held - excused
        judged = "judged " if excused else ""
        print(f"All {held} of this lesson's {judged}claims hold on this run."
              + (f" ({skipped} skipped)" if skipped else "")
              + (f" {excused} could not be judged: other programs held the CPUs (⚠ above)." if excused else ""))
        return held


class ClaimFirst(Claims):
    """Claims whose failure messages open with the claim, then the values that broke it (lessons 07 and 08)."""

    def check(self, claim: str, holds: Any, measured: str = "", bounds: str = "", message: str = "") -> bool:
        return super().check(claim, holds, measured, bounds, f"{claim}: {message}" if message else "")
