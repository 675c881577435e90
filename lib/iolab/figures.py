"""One way to build and show a figure.

A matplotlib Figure that pyplot never sees, shown as a static PNG.
"""

import io

from IPython.display import Image, display
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

DPI = 80  # sharp enough on a laptop screen, small enough that a lesson's notebook stays light


def figure(**options):
    """A new Figure drawn by Agg; `options` are Figure's (figsize, layout, dpi, ...).

    pyplot keeps no reference to it, so nothing leaks from cell to cell, and
    Jupyter does not display it by itself at the end of the cell: show() does,
    once.
    """
    new = Figure(**options)
    FigureCanvasAgg(new)
    return new


def subplots(nrows=1, ncols=1, *, figsize=None, layout=None, dpi=None, **subplot_options):
    """(figure, axes) like pyplot.subplots, without pyplot; `subplot_options` go to Figure.subplots (sharex, ...)."""
    new = figure(figsize=figsize, layout=layout, dpi=dpi)
    return new, new.subplots(nrows, ncols, **subplot_options)


def render(figure, dpi=DPI):
    """A Figure (or an Axes of one) as a PNG Image object, ready for display() or an ipywidgets.Image's value."""
    if isinstance(figure, Axes):
        figure = figure.figure
    FigureCanvasAgg(figure)  # also draws figures made elsewhere, whatever their canvas
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    return Image(data=buffer.getvalue(), format="png")


def show(figure, dpi=DPI):
    """Show a Figure (or an Axes of one) in the cell's output as a static PNG, which papermill keeps."""
    display(render(figure, dpi))
