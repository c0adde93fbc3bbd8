"""How each metric is shown: label, unit, direction, section and reading order.

The mart contract names metrics in snake_case; the report shows them the way the seeds talk about
them ("p95 request latency", "mean time between rebuffers"). Every display fact comes from the
metric registry (registry/metrics.yml through :mod:`quicexp.metrics`: ``label``, ``group``,
``scale``, ``unit``, ``direction``), so adding a metric is one entry there. A metric the registry
does not list (an older result) is still shown, with its name as label and no unit, so a mart
never breaks the report. :func:`reports.compose.render` pins one registry for a whole report
(:func:`using`); outside it the configured one (``Settings.metrics_file``) is read.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from quicexp.metrics import GROUPS, Metric, MetricRegistry, load_metrics

#: the metric that carries the request-latency percentile curve (p1…p99), not a scorecard row
CURVE_METRIC = "request_latency_curve"
#: the mean whose relative delta heads the percentile table ("mean" column, Langley et al. Table 1)
CURVE_MEAN_METRIC = "request_latency"


@dataclass(frozen=True)
class MetricDisplay:
    """Display facts of one metric.

    Attributes:
        label: lower-case noun phrase; quantile metrics get "p95 " in front of it.
        unit: unit of the displayed value ("ms", "kbps", "%", "" for a plain number).
        scale: factor from the mart's value to the displayed one (0..1 rates -> percent: 100).
        higher_is_better: direction of "better"; None when neither direction is a regression.
        group: section of the report the metric belongs to.
    """

    label: str
    unit: str = ""
    scale: float = 1.0
    higher_is_better: bool | None = False
    group: str = "other"

    @property
    def abs_unit(self) -> str:
        """Unit of an absolute delta: percentage points for rates shown in percent."""
        return "pp" if self.unit == "%" else self.unit


#: how a registry unit is shown (a fraction scaled by 100 is a percentage)
_UNIT_TEXT = {"kbit/s": "kbps"}

_active: MetricRegistry | None = None


@contextmanager
def using(registry: MetricRegistry) -> Iterator[None]:
    """Show metrics as ``registry`` says inside the block (one registry for a whole report)."""
    global _active
    previous, _active = _active, registry
    try:
        yield
    finally:
        _active = previous


def current() -> MetricRegistry:
    """The registry in use: the pinned one, else the configured one (ConfigError if bad)."""
    return _active if _active is not None else load_metrics()


def _display(m: Metric) -> MetricDisplay:
    unit = "%" if m.unit == "fraction" and m.scale == 100 else _UNIT_TEXT.get(m.unit, m.unit)
    return MetricDisplay(m.label, unit, m.scale, m.higher_is_better, m.group)


_memo: tuple[MetricRegistry, tuple[dict[str, MetricDisplay], dict[str, int]]] | None = None


def _catalog(registry: MetricRegistry) -> tuple[dict[str, MetricDisplay], dict[str, int]]:
    """The display facts of the registry in use, rebuilt only when it changes (load_metrics
    returns the same object while the file is unchanged)."""
    global _memo
    if _memo is None or _memo[0] is not registry:
        _memo = (registry, _build(registry))
    return _memo[1]


def _build(registry: MetricRegistry) -> tuple[dict[str, MetricDisplay], dict[str, int]]:
    """name -> display facts, and name -> reading rank (section order, then registry order)."""
    displays = {m.name: _display(m) for m in registry.metrics}
    ranked = sorted(registry.metrics, key=lambda m: GROUPS.index(m.group))
    return displays, {m.name: i for i, m in enumerate(ranked)}


#: metrics that make an experiment a multipath one (seed 004 section)
MULTIPATH_METRICS = frozenset(
    {"srtt_p", "srtt", "close_delay", "close_delay_p", "reinjection_overhead"}
)


def display(metric: str) -> MetricDisplay:
    """Display facts of ``metric`` from the registry; a plain fallback for an unknown name."""
    found = _catalog(current())[0].get(metric)
    return found or MetricDisplay(metric.replace("_", " "), higher_is_better=None)


def metric_label(metric: str, quantile_p: float | None = None) -> str:
    """ "p95 request latency" for a quantile row, the registry label otherwise."""
    label = display(metric).label
    if quantile_p is None or quantile_p != quantile_p:  # None or NaN
        return label
    return f"{percentile_name(quantile_p)} {label}"


def percentile_name(quantile_p: float) -> str:
    """0.95 -> "p95", 0.999 -> "p99.9"."""
    pct = round(float(quantile_p) * 100, 6)
    return f"p{pct:g}"


def sort_key(metric: str, quantile_p: float | None = None) -> tuple:
    """Reading order (section, then registry order; unknown metrics last, by name), then the
    quantile."""
    qp = -1.0 if quantile_p is None or quantile_p != quantile_p else float(quantile_p)
    order = _catalog(current())[1]
    return (order.get(metric, len(order)), metric, qp)
