"""Small Markdown tables for notebooks, so figures line up without pandas."""

import math
from collections.abc import Iterable, Sequence

from IPython.display import Markdown


def cell(value: object, digits: int = 3) -> str:
    """A number with `digits` significant figures (whole numbers stay whole); None and NaN become a dash."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 10 ** digits else f"{value:.{digits}g}"
    return str(value)


def markdown(headers: Sequence[str], rows: Iterable[Iterable[object]]) -> Markdown:
    """A Markdown table; every row is a list of values as long as `headers`."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(value) for value in row) + " |" for row in rows]
    return Markdown("\n".join(lines))
