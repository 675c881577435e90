"""Small Markdown tables for notebooks, so figures line up without pandas."""

import math

from IPython.display import Markdown


def cell(value, digits=3):
    """A number with `digits` significant figures (whole numbers stay whole); None and NaN become a dash."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 10 ** digits else f"{value:.{digits}g}"
    return str(value)


def markdown(headers, rows):
    """A Markdown table; every row is a list of values as long as `headers`."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(value) for value in row) + " |" for row in rows]
    return Markdown("\n".join(lines))
