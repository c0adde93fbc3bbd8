"""Numbers in the seeds' shape: "p95 request latency, Windows: +98 ms (+3.0%) [+61, +135]".

Pure functions from floats to strings. A missing or non-finite number is always shown as an en
dash, never as "nan" or "None". Absolute deltas and their intervals share one number of decimals,
chosen so the interval's half-width has two significant digits (the interval says how many digits
mean something).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from reports.metrics import MetricDisplay, display, metric_label

MISSING = "–"
#: platforms in the order the architecture lists them; other values follow
PLATFORM_ORDER = ("Windows", "Android", "macOS", "iOS", "Linux")


def is_missing(value: Any) -> bool:
    """True for None, NaN, ±inf and anything that is not a number."""
    try:
        return value is None or not math.isfinite(float(value))
    except (TypeError, ValueError):
        return True


def decimals_for(width: float, significant: int = 2) -> int:
    """Decimals that show ``width`` with ``significant`` digits (0…4)."""
    if is_missing(width) or width <= 0:
        return 1
    return max(0, min(4, significant - 1 - math.floor(math.log10(abs(width)))))


def number(value: float, decimals: int | None = None, signed: bool = False) -> str:
    """A number with thousands separators; ``decimals=None`` keeps three significant digits."""
    if is_missing(value):
        return MISSING
    value = float(value)
    if decimals is None:
        decimals = 0 if abs(value) >= 100 else decimals_for(abs(value), 3)
    text = f"{value:+,.{decimals}f}" if signed else f"{value:,.{decimals}f}"
    if signed and float(text.replace(",", "")) == 0:
        text = text[1:]
    return text


def with_unit(text: str, unit: str) -> str:
    """ "98" + "ms" -> "98 ms"; "5.2" + "%" -> "5.2%"."""
    if text == MISSING or not unit:
        return text
    return f"{text}%" if unit == "%" else f"{text} {unit}"


def percent(fraction: float, signed: bool = True) -> str:
    """A relative change as percent: 0.0304 -> "+3.0%", 0.0016 -> "+0.16%"."""
    if is_missing(fraction):
        return MISSING
    pct = float(fraction) * 100
    decimals = 0 if abs(pct) >= 100 else 1 if abs(pct) >= 1 else 2
    return number(pct, decimals, signed) + "%"


def value_text(value: float, disp: MetricDisplay, decimals: int | None = None) -> str:
    """An arm's value in display units, e.g. "3,215 ms" or "5.20%"."""
    if is_missing(value):
        return MISSING
    return with_unit(number(float(value) * disp.scale, decimals), disp.unit)


def shared_decimals(values: list[float], significant: int = 3) -> int | None:
    """One number of decimals for numbers shown side by side (an arm's value beside the
    other's): ``significant`` digits of the largest, so "792" never stands beside "782.2"."""
    finite = [abs(float(v)) for v in values if not is_missing(v) and float(v) != 0]
    if not finite:
        return None
    return 0 if max(finite) >= 10 ** (significant - 1) else decimals_for(max(finite), significant)


def arm_values(control: float, treatment: float, disp: MetricDisplay) -> tuple[str, str]:
    """Both arms' values with one number of decimals (three significant digits of the larger)."""
    d = shared_decimals([v * disp.scale for v in (control, treatment) if not is_missing(v)])
    return value_text(control, disp, d), value_text(treatment, disp, d)


def segment_label(segment_type: str, segment_value: str) -> str:
    """ "overall"/"all" -> "overall"; "Windows|100-200ms" -> "Windows, 100-200ms"."""
    if segment_type == "overall":
        return "overall"
    return ", ".join(str(segment_value).split("|"))


def bucket_order(value: str) -> tuple[float, int, str]:
    """Buckets sort by their first number ("50-100ms" before "100-200ms"; "<0.5%" before "0.5-2%")."""
    text = str(value).strip()
    m = re.search(r"\d+(\.\d+)?", text)
    rank = 0 if text.startswith("<") else 2 if text.startswith(">") else 1
    return (float(m.group()) if m else float("inf"), rank, text)


def segment_rank(segment_type: str, segment_value: str) -> tuple:
    """Overall first, platforms in PLATFORM_ORDER, buckets by their lower edge."""
    if segment_type == "overall":
        return (0, 0, "")
    if segment_value in PLATFORM_ORDER:
        return (1, PLATFORM_ORDER.index(segment_value), "")
    return (2, *bucket_order(segment_value))


@dataclass(frozen=True)
class Effect:
    """The strings of one comparison, all in display units."""

    label: str
    segment: str
    delta: str
    rel: str
    ci: str
    rel_ci: str
    seq_ci: str
    seq_rel_ci: str
    mde: str

    @property
    def line(self) -> str:
        """The seeds' one-liner: "p95 request latency, Windows: +98 ms (+3.0%) [+61, +135] ms"
        (no relative delta where it is undefined: a control of 0)."""
        rel = f" ({self.rel})" if self.rel != MISSING else ""
        return f"{self.label}, {self.segment}: {self.delta}{rel} {self.ci}"


def _interval(lo: float, hi: float, decimals: int, scale: float = 1.0, unit: str = "") -> str:
    """ "[+61, +135] ms": the interval's ends share the delta's decimals, the unit follows."""
    if is_missing(lo) or is_missing(hi):
        return MISSING
    ends = f"[{number(float(lo) * scale, decimals, True)}, {number(float(hi) * scale, decimals, True)}]"
    return with_unit(ends, unit)


def _pct_interval(lo: float, hi: float) -> str:
    if is_missing(lo) or is_missing(hi):
        return MISSING
    return f"[{percent(lo)}, {percent(hi)}]"


def as_float(value: Any) -> float:
    """``value`` as a float, NaN when it is missing or not a number."""
    return math.nan if is_missing(value) else float(value)


def effect(row: Any) -> Effect:
    """Format one results row (a namedtuple or mapping with the stats engine's columns)."""
    get = row.get if isinstance(row, dict) else lambda k: getattr(row, k, None)
    disp = display(get("metric"))
    s = disp.scale
    lo, hi, delta = (
        as_float(get("ci_abs_lower")),
        as_float(get("ci_abs_upper")),
        as_float(get("delta_abs")),
    )
    width = (hi - lo) / 2 * s
    decimals = decimals_for(width) if not is_missing(width) else decimals_for(abs(delta * s), 2)
    mde_abs, mde_rel = as_float(get("mde_abs")), get("mde_rel")
    mde = MISSING
    if not is_missing(mde_abs):
        mde = "±" + with_unit(number(mde_abs * s, decimals_for(mde_abs * s)), disp.abs_unit)
        if not is_missing(mde_rel):
            mde += f" (±{percent(mde_rel, signed=False)})"
    return Effect(
        label=metric_label(get("metric"), get("quantile_p")),
        segment=segment_label(get("segment_type"), get("segment_value")),
        delta=with_unit(number(delta * s, decimals, True), disp.abs_unit),
        rel=percent(get("delta_rel")),
        ci=_interval(lo, hi, decimals, s, disp.abs_unit),
        rel_ci=_pct_interval(get("ci_rel_lower"), get("ci_rel_upper")),
        seq_ci=_interval(get("seq_ci_abs_lower"), get("seq_ci_abs_upper"), decimals, s, disp.abs_unit),
        seq_rel_ci=_pct_interval(get("seq_ci_rel_lower"), get("seq_ci_rel_upper")),
        mde=mde,
    )


def verdict(significant: bool, delta: float, metric: str) -> str:
    """ "better", "worse", "higher"/"lower" (no preferred direction) or "no significant difference"."""
    if not significant or is_missing(delta) or float(delta) == 0:
        return "no significant difference"
    up = float(delta) > 0
    direction = display(metric).higher_is_better
    if direction is None:
        return "higher" if up else "lower"
    return "better" if up == direction else "worse"


#: the power columns of gold.experiment_results; older results lack them and still render
POWER_COLUMNS = (
    "mde_relative",
    "mde_relative_planned",
    "target_relative_effect",
    "is_underpowered",
    "sequential_width_ratio",
)


@dataclass(frozen=True)
class Power:
    """Power facts of one comparison, as strings (MISSING when the results lack them).

    Attributes:
        mde_now: minimum detectable relative effect at the current size ("±4.2%").
        mde_planned: the same at the planned size (MISSING without a plan).
        target: the registry's target relative effect (MISSING when none).
        underpowered: the metric cannot detect the target effect at the planned size.
        seq_width: how much wider the always-valid interval is than the fixed one ("2.1×").
    """

    mde_now: str
    mde_planned: str
    target: str
    underpowered: bool
    seq_width: str


def power(row: Any) -> Power:
    """Power facts of a results row (a namedtuple or mapping)."""
    get = row.get if isinstance(row, dict) else lambda k: getattr(row, k, None)

    def mde(column: str) -> str:
        value = get(column)
        return MISSING if is_missing(value) else "±" + percent(value, signed=False)

    flag = get("is_underpowered")
    ratio = get("sequential_width_ratio")
    return Power(
        mde_now=mde("mde_relative"),
        mde_planned=mde("mde_relative_planned"),
        target=mde("target_relative_effect"),
        underpowered=bool(flag) if flag is not None and flag == flag else False,
        seq_width=MISSING if is_missing(ratio) else f"{float(ratio):.1f}×",
    )


def power_columns(frame: Any) -> set[str]:
    """The power columns ``frame`` carries (a results frame of any age)."""
    return {c for c in POWER_COLUMNS if c in getattr(frame, "columns", ())}
