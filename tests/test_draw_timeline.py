"""tools/draw_timeline.py: the committed timeline of lesson 00 is what the script draws, and it is well-formed SVG."""

import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import draw_timeline  # noqa: E402  (tools/ is not a package)


def test_the_committed_svg_is_what_the_script_draws():
    assert draw_timeline.OUT.read_text() == draw_timeline.draw(), "run python tools/draw_timeline.py and commit the SVG"


def test_the_svg_parses_and_shows_both_handlers():
    root = ElementTree.fromstring(draw_timeline.draw())
    words = " ".join(element.text or "" for element in root.iter("{http://www.w3.org/2000/svg}text"))
    assert "time.sleep(0.5)" in words and "await asyncio.sleep(0.5)" in words
