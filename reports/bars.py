"""An interval drawn against its thresholds, as a small inline SVG (the decision cards' bar).

Pure string building: no matplotlib, so the first screen is crisp at any zoom and its parts can be
read from the DOM (``data-*`` attributes). The axis is chosen around what decides — 0, the margin
or minimum effect, the estimate — and an interval end beyond it (or unbounded: too few events,
Fieller's set open) is clipped at the axis and drawn as an arrow head, so one wide interval never
squashes the picture. Colour is the card's reading (better / worse / not shown), never the sign.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

#: tone -> (bar colour, light fill)
TONES = {"good": ("#1a7f37", "#aceebb"), "bad": ("#cf222e", "#ffcecb"), "neutral": ("#57606a", "#d0d7de")}
WIDTH, HEIGHT = 300, 36
_LEFT, _RIGHT, _AXIS_Y = 10, 290, 19


@dataclass(frozen=True)
class Mark:
    """A vertical line on the axis: 0, a guardrail's margin, a success metric's minimum effect."""

    value: float
    text: str
    kind: str  # "zero" | "margin" | "minimum"


def finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def axis_range(low: float, high: float, estimate: float, marks: list[float]) -> tuple[float, float]:
    """The axis: everything that decides (0, the marks, the estimate) with room around it; an
    interval end only while it stays within two such spans of it (beyond: clipped, an arrow).
    ``low``/``high`` may be ±inf (unbounded)."""
    core = [v for v in (0.0, estimate, *marks) if finite(v)]
    lo, hi = min(core), max(core)
    base = hi - lo
    if base == 0:
        ends = [abs(v - lo) for v in (low, high) if finite(v)]
        base = max(ends) if ends and max(ends) > 0 else 1.0
    xmin = max(min(lo, low), lo - 2 * base)
    xmax = min(max(hi, high), hi + 2 * base)
    pad = 0.06 * (xmax - xmin)
    return xmin - pad, xmax + pad


def _x(value: float, xmin: float, xmax: float) -> float:
    return _LEFT + (value - xmin) / (xmax - xmin) * (_RIGHT - _LEFT)


def _arrow(x: float, pointing: int, colour: str) -> str:
    """A filled triangle at the axis end, pointing outwards (-1 left, +1 right)."""
    tip, base = x + 6 * pointing, x
    y = _AXIS_Y
    return f'<polygon class="clip" points="{tip:.1f},{y} {base:.1f},{y - 5} {base:.1f},{y + 5}" fill="{colour}"/>'


def interval_svg(low: float, high: float, estimate: float, marks: list[Mark], tone: str,
                 unit: str, title: str = "") -> str:  # fmt: skip
    """The SVG of one interval [low, high] (±inf: unbounded) around ``estimate``, with ``marks``.

    ``data-clipped`` names the ends drawn as arrows ("low", "high"), for tests and readers.
    """
    colour, fill = TONES.get(tone, TONES["neutral"])
    xmin, xmax = axis_range(low, high, estimate, [m.value for m in marks if m.kind != "zero"])
    parts = [f'<line x1="{_LEFT}" y1="{_AXIS_Y}" x2="{_RIGHT}" y2="{_AXIS_Y}" stroke="#d0d7de"/>']
    for m in marks:
        if not finite(m.value) or not xmin <= m.value <= xmax:
            continue
        x = _x(m.value, xmin, xmax)
        zero = m.kind == "zero"
        dash = "" if zero else ' stroke-dasharray="3,2"'
        stroke = "#1b1f24" if zero else "#9a6700"
        parts.append(f'<line x1="{x:.1f}" y1="{_AXIS_Y - 9}" x2="{x:.1f}" y2="{_AXIS_Y + 9}" stroke="{stroke}"{dash}/>')
        # 0 above the axis, the margin / minimum effect below: they never overlap
        y, anchor = (8, "middle") if zero else (HEIGHT - 1, "end" if x > _RIGHT - 50 else "start" if x < _LEFT + 50 else "middle")
        parts.append(f'<text x="{x:.1f}" y="{y}" text-anchor="{anchor}" class="mark {m.kind}">{escape(m.text)}</text>')
    clipped = []
    if finite(estimate):
        lo = low if finite(low) and low >= xmin else xmin
        hi = high if finite(high) and high <= xmax else xmax
        x0, x1 = _x(lo, xmin, xmax), _x(hi, xmin, xmax)
        parts.append(f'<rect class="ci" x="{x0:.1f}" y="{_AXIS_Y - 4}" width="{max(x1 - x0, 1):.1f}" height="8" rx="2" fill="{fill}" stroke="{colour}"/>')
        if lo != low:
            clipped.append("low")
            parts.append(_arrow(_LEFT, -1, colour))
        if hi != high:
            clipped.append("high")
            parts.append(_arrow(_RIGHT, +1, colour))
        parts.append(f'<circle class="estimate" cx="{_x(estimate, xmin, xmax):.1f}" cy="{_AXIS_Y}" r="4" fill="{colour}"/>')
    body = "".join(parts)
    label = escape(title or f"interval in {unit}")
    return (f'<svg class="bar" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" role="img" '
            f'aria-label="{label}" data-unit="{escape(unit)}" data-clipped="{" ".join(clipped)}">'
            f"<title>{label}</title>{body}</svg>")  # fmt: skip
