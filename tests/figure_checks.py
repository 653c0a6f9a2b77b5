"""Measurements of a matplotlib figure as a reader sees it, for the figure tests.

Every figure of the book is a matplotlib ``Figure`` (the SVG diagrams too: they are drawn
with matplotlib and saved as SVG with text kept as text), so one set of measurements
serves them all. The layout is the one matplotlib computes when it saves the figure
(constrained layout included); text boxes come from ``Text.get_window_extent`` with
matplotlib's own font metrics (DejaVu Sans, the font the SVGs name first).

* :func:`overlapping_texts`: pairs of visible texts whose boxes overlap, and texts that
  stick out of the figure (cut off in the PNG);
* :func:`smallest_phone_text_px`: the smallest font size, in CSS px, when the page shows
  the figure at ``plots.PHONE_CONTENT_PX`` (``transformer_lessons.plots.phone_text_px``), of
  every glyph: a mathtext script such as the Q of W^Q is drawn at 70 % of its label's size
  (``plots.text_sizes_pt``). The browser test measures the same on the built pages, with the
  width Chromium shows each image at (tests/browser/test_browser_layout.py);
* :func:`non_square_cells`: heatmaps whose cells are not square on the page.
"""

from __future__ import annotations

import matplotlib
from matplotlib.figure import Figure
from matplotlib.text import Text

from transformer_lessons import plots

TOLERANCE_PX = 0.5  # boxes that merely touch (anti-aliasing) do not count as overlapping


def drawn_texts(fig: Figure) -> tuple[list[Text], object]:
    """Every text that saving ``fig`` draws (visible, not blank), and the renderer.

    Recorded while the figure is drawn, as ``savefig`` draws it (layout included), so
    tick labels that sharex/sharey turn off, or ticks outside the view, are left out."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    seen: list[Text] = []
    original = Text.draw

    def draw(self, renderer):
        if self.get_visible() and self.get_text().strip():
            seen.append(self)
        return original(self, renderer)

    Text.draw = draw
    try:
        canvas.draw()
    finally:
        Text.draw = original
    return list(dict.fromkeys(seen)), canvas.get_renderer()


def visible_texts(fig: Figure) -> list[Text]:
    return drawn_texts(fig)[0]


def text_boxes(fig: Figure) -> list[tuple[str, matplotlib.transforms.Bbox]]:
    texts, renderer = drawn_texts(fig)
    return [(t.get_text(), t.get_window_extent(renderer)) for t in texts]


def overlapping_texts(fig: Figure) -> list[str]:
    """Descriptions of every overlap between two texts, and of every text outside the figure."""
    boxes = text_boxes(fig)
    width, height = fig.bbox.width, fig.bbox.height
    problems = []
    for n, (a, box_a) in enumerate(boxes):
        if box_a.x0 < -TOLERANCE_PX or box_a.y0 < -TOLERANCE_PX or box_a.x1 > width + TOLERANCE_PX \
                or box_a.y1 > height + TOLERANCE_PX:
            problems.append(f"{a!r} sticks out of the figure ({box_a.bounds} in {width:.0f}x{height:.0f})")
        for b, box_b in boxes[n + 1:]:
            dx = min(box_a.x1, box_b.x1) - max(box_a.x0, box_b.x0)
            dy = min(box_a.y1, box_b.y1) - max(box_a.y0, box_b.y0)
            if dx > TOLERANCE_PX and dy > TOLERANCE_PX:
                problems.append(f"{a!r} overlaps {b!r} by {dx:.1f} x {dy:.1f} px")
    return problems


def smallest_phone_text_px(fig: Figure, svg: bool = False) -> tuple[float, str]:
    """The smallest visible text's font size in CSS px on a 390 px phone, and that text."""
    return min((plots.phone_text_px(fig, min(plots.text_sizes_pt(t)), svg=svg), t.get_text()) for t in visible_texts(fig))


def non_square_cells(fig: Figure, tolerance: float = 0.02) -> list[str]:
    """Heatmaps (images drawn by ``imshow``) whose cells are not square as drawn, within
    ``tolerance`` (relative). Images placed with an explicit extent inside a diagram are
    drawn to the diagram's own grid and are checked by their cell size there."""
    drawn_texts(fig)  # lays the figure out
    problems = []
    for ax in fig.axes:
        for image in ax.images:
            rows, cols = image.get_array().shape[:2]
            x0, x1, y0, y1 = image.get_extent()
            corners = ax.transData.transform([(x0, y0), (x1, y1)])
            w, h = abs(corners[1][0] - corners[0][0]) / cols, abs(corners[1][1] - corners[0][1]) / rows
            if abs(w - h) > tolerance * max(w, h):
                problems.append(f"{rows}x{cols} image with cells {w:.1f} x {h:.1f} px")
    return problems
