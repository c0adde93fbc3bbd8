"""How each metric of the mart contract is shown: label, unit, direction and reading order.

The mart contract names metrics in snake_case; the report shows them the way the seeds talk about
them ("p95 request latency", "mean time between rebuffers"). Unit and direction come from the
metric registry (registry/metrics.yml: ``unit``, ``direction``) when it lists the metric, so the
report never disagrees with the models; labels and display scale live here. A metric known to
neither is still shown, with its name as label and no unit, so a new mart never breaks the report.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

import yaml

from quicexp.config import REPO_ROOT

METRICS_FILE = REPO_ROOT / "registry" / "metrics.yml"

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


_LAT = {"unit": "ms", "group": "latency"}
_VID = {"group": "video"}
_TRN = {"group": "transport"}
_PCT = {"unit": "%", "scale": 100.0}

CATALOG: dict[str, MetricDisplay] = {
    "request_latency": MetricDisplay("mean request latency", **_LAT),
    "request_latency_p": MetricDisplay("request latency", **_LAT),
    "request_latency_per_client": MetricDisplay("request latency per client", **_LAT),
    "search_latency": MetricDisplay("mean search latency", **_LAT),
    "search_latency_p": MetricDisplay("search latency", **_LAT),
    "search_abandonment_rate": MetricDisplay("search abandonment rate", group="latency", **_PCT),
    "page_load_time": MetricDisplay("page load time", **_LAT),
    "speed_index": MetricDisplay("speed index", **_LAT),
    "hol_blocked_time_per_request": MetricDisplay("HoL-blocked time per request", **_LAT),
    "mtbr": MetricDisplay("mean time between rebuffers", unit="s", higher_is_better=True, **_VID),
    "rebuffers_per_playback": MetricDisplay("rebuffers per playback", **_VID),
    "rebuffer_time_ratio": MetricDisplay("rebuffer time ratio", **_PCT, **_VID),
    "mean_client_bandwidth": MetricDisplay(
        "mean client bandwidth", unit="kbps", higher_is_better=True, **_VID
    ),
    "time_to_first_frame": MetricDisplay("time to first frame", unit="ms", **_VID),
    "retransmit_rate": MetricDisplay("retransmit rate", **_PCT, **_TRN),
    "srtt_p": MetricDisplay("smoothed RTT", unit="ms", **_TRN),
    "srtt": MetricDisplay("mean smoothed RTT", unit="ms", **_TRN),
    "close_delay": MetricDisplay("mean close delay", unit="ms", **_TRN),
    "close_delay_p": MetricDisplay("close delay", unit="ms", **_TRN),
    "reinjection_overhead": MetricDisplay("re-injection overhead", **_PCT, **_TRN),
    "header_compression_ratio": MetricDisplay("header compression ratio", **_PCT, **_TRN),
    "header_hol_delay": MetricDisplay("header HoL delay", unit="ms", **_TRN),
    "zero_rtt_share": MetricDisplay("0-RTT share", higher_is_better=True, **_PCT, **_TRN),
    CURVE_METRIC: MetricDisplay("request latency (curve)", **_LAT),
}

#: reading order of metrics (catalog order); unknown metrics come after, by name
ORDER = {name: i for i, name in enumerate(CATALOG)}

#: metrics that make an experiment a multipath one (seed 004 section)
MULTIPATH_METRICS = frozenset(
    {"srtt_p", "srtt", "close_delay", "close_delay_p", "reinjection_overhead"}
)


@cache
def registry_entries(path: Path = METRICS_FILE) -> dict[str, dict]:
    """name -> entry of registry/metrics.yml ({} when the file is absent or unreadable)."""
    try:
        data = yaml.safe_load(Path(path).read_text()) or {}
    except (OSError, yaml.YAMLError):
        return {}
    entries = data.get("metrics") if isinstance(data, dict) else None
    return {e["name"]: e for e in entries or [] if isinstance(e, dict) and "name" in e}


def _from_registry(base: MetricDisplay, entry: dict) -> MetricDisplay:
    unit = str(entry.get("unit") or base.unit)
    scale = base.scale
    if unit == "fraction":
        unit, scale = "%", 100.0
    elif unit == "kbit/s":
        unit = "kbps"
    direction = entry.get("direction")
    higher = (
        True
        if direction == "increase"
        else False
        if direction == "decrease"
        else base.higher_is_better
    )
    return replace(base, unit=unit, scale=scale, higher_is_better=higher)


@cache
def display(metric: str) -> MetricDisplay:
    """Display facts of ``metric``: catalog label, registry unit/direction, plain fallback."""
    base = CATALOG.get(metric) or MetricDisplay(metric.replace("_", " "), higher_is_better=None)
    entry = registry_entries().get(metric)
    return _from_registry(base, entry) if entry else base


def metric_label(metric: str, quantile_p: float | None = None) -> str:
    """ "p95 request latency" for a quantile row, the catalog label otherwise."""
    label = display(metric).label
    if quantile_p is None or quantile_p != quantile_p:  # None or NaN
        return label
    return f"{percentile_name(quantile_p)} {label}"


def percentile_name(quantile_p: float) -> str:
    """0.95 -> "p95", 0.999 -> "p99.9"."""
    pct = round(float(quantile_p) * 100, 6)
    return f"p{pct:g}"


def sort_key(metric: str, quantile_p: float | None = None) -> tuple:
    """Catalog order, then the quantile."""
    qp = -1.0 if quantile_p is None or quantile_p != quantile_p else float(quantile_p)
    return (ORDER.get(metric, len(ORDER)), metric, qp)
