"""Reads a word in a figure's title without OCR.

The word drawn by matplotlib, matched against the figure's top strip.
"""

import io

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image, ImageFilter

# Titles are drawn in matplotlib's default font at 10-13 pt and 72-100 dpi: 9 to 18 pixels per em.
TEXT_SIZES_PX = np.arange(9, 18.5, 0.5)
# Blurring both sides by most of a pixel makes the match indifferent to where between two pixels a glyph fell.
BLUR_PX = 0.7
# Normalised correlation: the words of a title score 0.93 or more, other words 0.7 or less.
MATCH = 0.85


def darkness(image):
    """0 for white, 255 for black, after the blur."""
    blurred = image.convert("L").filter(ImageFilter.GaussianBlur(BLUR_PX))
    return 255.0 - np.asarray(blurred, dtype=float)


def drawn_text(text, size_px):
    """`text` as matplotlib draws it at `size_px` pixels per em, cropped to its ink with a blur's margin."""
    figure = Figure(figsize=(10, 1), dpi=72)  # at 72 dpi a point is a pixel
    FigureCanvasAgg(figure)
    figure.text(0.01, 0.5, text, fontsize=size_px, va="center")
    figure.canvas.draw()
    ink = 255 - np.asarray(figure.canvas.buffer_rgba())[:, :, :3].min(axis=2)
    rows, columns = np.nonzero(ink > 20)
    box = (columns.min() - 2, rows.min() - 2, columns.max() + 3, rows.max() + 3)
    return darkness(Image.fromarray(np.asarray(figure.canvas.buffer_rgba())).crop(box))


def best_correlation(area, template):
    """The highest normalised cross-correlation of `template` at any position inside `area` (computed by FFT)."""
    height, width = template.shape
    rows, columns = area.shape
    if height > rows or width > columns:
        return 0.0
    centred = template - template.mean()
    shape = (rows + height, columns + width)
    products = np.fft.irfft2(np.fft.rfft2(area, shape) * np.conj(np.fft.rfft2(centred, shape)), shape)
    products = products[: rows - height + 1, : columns - width + 1]
    # Each window's spread from sums over the window, taken from cumulative sums (an integral image).
    def window_sums(values):
        table = np.pad(values.cumsum(0).cumsum(1), ((1, 0), (1, 0)))
        return table[height:, width:] - table[:-height, width:] - table[height:, :-width] + table[:-height, :-width]
    count = height * width
    sums, squares = window_sums(area), window_sums(area * area)
    spread = np.sqrt(np.maximum(squares - sums * sums / count, 0))
    # A blank window has no spread, and dividing the FFT's rounding noise by it would score anything.
    scores = np.where(spread > 1.0, products / (np.maximum(spread, 1.0) * np.sqrt((centred * centred).sum())), 0.0)
    return float(scores.max())


def title_score(png_bytes, word):
    """How well `word` matches somewhere in the figure's title strip (its top eighth), at any usual text size."""
    image = Image.open(io.BytesIO(png_bytes))
    strip = darkness(image.crop((0, 0, image.width, max(32, image.height // 8))))
    return max(best_correlation(strip, drawn_text(word, size)) for size in TEXT_SIZES_PX)
