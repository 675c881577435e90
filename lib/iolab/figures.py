"""One way to build and show a figure.

A matplotlib Figure that pyplot never sees, shown as a static PNG.
"""

import io
from typing import Any, cast

from IPython.display import Image, display
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

DPI = 80  # sharp enough on a laptop screen, small enough that a lesson's notebook stays light


def figure(**options: Any) -> Figure:
    """A new Figure drawn by Agg; `options` are Figure's (figsize, layout, dpi, ...).

    pyplot keeps no reference to it, so nothing leaks from cell to cell, and
    Jupyter does not display it by itself at the end of the cell: show() does,
    once.
    """
    new = Figure(**options)
    FigureCanvasAgg(new)
    return new


def subplots(
    nrows: int = 1,
    ncols: int = 1,
    *,
    figsize: tuple[float, float] | None = None,
    layout: str | None = None,
    dpi: float | None = None,
    **subplot_options: Any,
) -> tuple[Figure, Any]:
    """(figure, axes) like pyplot.subplots, without pyplot; `subplot_options` go to Figure.subplots (sharex, ...)."""
    new = figure(figsize=figsize, layout=layout, dpi=dpi)
    return new, new.subplots(nrows, ncols, **subplot_options)


def render(figure: Figure | Axes, dpi: float = DPI) -> Image:
    """A Figure (or an Axes of one) as a PNG Image object, ready for display() or an ipywidgets.Image's value."""
    if isinstance(figure, Axes):
        figure = cast(Figure, figure.figure)  # an Axes passed here sits on a Figure, not a SubFigure
    FigureCanvasAgg(figure)  # also draws figures made elsewhere, whatever their canvas
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    return Image(data=buffer.getvalue(), format="png")


def show(figure: Figure | Axes, dpi: float = DPI) -> None:
    """Show a Figure (or an Axes of one) in the cell's output as a static PNG, which papermill keeps."""
    display(render(figure, dpi))
