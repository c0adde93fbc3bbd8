"""The multipath section (seed 004 shape): per arm (and per path where the mart splits by path),
close delay and smoothed RTT at avg/p50/p90/p95/p99, the re-injection overhead, and the
treatment's relative change at each percentile ("improvement median / 95th / 99th").

Values are the arms' experiment-to-date estimates from the results (value_control /
value_treatment), so they are the same numbers the scorecard tests.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from reports.fmt import MISSING, is_missing, number, percent
from reports.metrics import MULTIPATH_METRICS, display
from reports.plots import PALETTE, Chart, plt, png_uri

COLUMNS = ("avg", "p50", "p90", "p95", "p99")
#: (label, mean metric, quantile metric) of the table's measures
MEASURES = (("close delay", "close_delay", "close_delay_p"), ("srtt", "srtt", "srtt_p"))
#: segment types that split a metric by path (the overall row is the connection-level value)
PATH_SEGMENTS = ("path", "path_id")


@dataclass(frozen=True)
class MultipathRow:
    arm: str
    measure: str
    cells: list[str]
    is_delta: bool = False


@dataclass(frozen=True)
class MultipathSection:
    rows: list[MultipathRow]
    overhead: list[tuple[str, str]]
    images: list[Chart]


def is_multipath(today: pd.DataFrame) -> bool:
    return bool(today["metric"].isin(MULTIPATH_METRICS).any())


def _arm_values(rows: pd.DataFrame) -> dict[str, float]:
    """arm -> value from comparison rows (control from any row, each treatment from its own)."""
    if rows.empty:
        return {}
    out = {str(rows["control_arm"].iloc[0]): float(rows["value_control"].iloc[0])}
    for r in rows.itertuples(index=False):
        out[str(r.treatment_arm)] = float(r.value_treatment)
    return out


def _cell(today: pd.DataFrame, metric: str, column: str, seg: tuple[str, str]) -> pd.DataFrame:
    d = today[
        (today["metric"] == metric)
        & (today["segment_type"] == seg[0])
        & (today["segment_value"] == seg[1])
    ]
    if column == "avg":
        return d
    p = float(column[1:]) / 100
    return d[(d["quantile_p"] - p).abs() < 1e-9]


def _segments(today: pd.DataFrame, mean: str, quant: str) -> list[tuple[str, str]]:
    d = today[today["metric"].isin((mean, quant))]
    segs = [("overall", "all")] if (d["segment_type"] == "overall").any() else []
    paths = d[d["segment_type"].isin(PATH_SEGMENTS)][
        ["segment_type", "segment_value"]
    ].drop_duplicates()
    return segs + sorted(
        zip(paths["segment_type"], paths["segment_value"], strict=True), key=lambda s: s[1]
    )


def _measure_rows(today: pd.DataFrame, arms: list[str]) -> tuple[list[MultipathRow], dict]:
    rows, series = [], {}
    for label, mean, quant in MEASURES:
        unit = display(quant).unit or display(mean).unit
        for seg in _segments(today, mean, quant):
            name = (
                f"{label} ({unit})" if seg[0] == "overall" else f"{label}, path {seg[1]} ({unit})"
            )
            per_col = {c: _cell(today, mean if c == "avg" else quant, c, seg) for c in COLUMNS}
            values = {c: _arm_values(d) for c, d in per_col.items()}
            for arm in arms:
                cells = [number(values[c].get(arm), 0 if unit == "ms" else None) for c in COLUMNS]
                rows.append(MultipathRow(arm, name, cells))
                series[(name, arm)] = [values[c].get(arm, float("nan")) for c in COLUMNS]
            for arm in arms[1:]:
                cells = []
                for c in COLUMNS:
                    d = per_col[c][per_col[c]["treatment_arm"] == arm]
                    if d.empty:
                        cells.append(MISSING)
                    else:
                        mark = "*" if bool(d["is_significant"].iloc[0]) else ""
                        cells.append(percent(d["delta_rel"].iloc[0]) + mark)
                rows.append(MultipathRow(f"Δ {arm} vs {arms[0]}", name, cells, is_delta=True))
    return rows, series


def _plot(series: dict, overhead: dict[str, float], arms: list[str]) -> list[Chart]:
    measures = sorted({m for m, _ in series})
    if not measures:
        return []
    panels = len(measures) + (1 if overhead else 0)
    fig, axes = plt.subplots(1, panels, figsize=(3.8 * panels, 3.0), squeeze=False)
    for ax, measure in zip(axes[0], measures, strict=False):
        for i, arm in enumerate(arms):
            y = series.get((measure, arm))
            if y is not None:
                ax.plot(COLUMNS, y, "o-", color=PALETTE[i % len(PALETTE)], ms=4, label=arm)
        ax.set_title(measure, fontsize=9)
        values = [v for arm in arms for v in series.get((measure, arm)) or () if v == v]  # NaN: no value
        if values and min(values) > 0:  # a zero (none re-injected, say) has no place on a log axis
            ax.set_yscale("log")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
    if overhead:
        ax = axes[0][-1]
        names = [a for a in arms if a in overhead]
        ax.bar(
            names,
            [overhead[a] * 100 for a in names],
            color=[PALETTE[arms.index(a) % len(PALETTE)] for a in names],
        )
        ax.set_title("re-injection overhead (% of path bytes)", fontsize=9)
        ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    return [png_uri(fig, measures)]


def multipath_section(today: pd.DataFrame, arm_order: list[str]) -> MultipathSection | None:
    """The section, or None when the experiment has no multipath metrics."""
    if today.empty or not is_multipath(today):
        return None
    present = set(today["control_arm"].astype(str)) | set(today["treatment_arm"].astype(str))
    arms = [a for a in arm_order if a in present] or sorted(present)
    rows, series = _measure_rows(today, arms)
    ov = today[(today["metric"] == "reinjection_overhead") & (today["segment_type"] == "overall")]
    overhead_values = {a: v for a, v in _arm_values(ov).items() if not is_missing(v)}
    overhead = [
        (a, percent(overhead_values[a], signed=False)) for a in arms if a in overhead_values
    ]
    return MultipathSection(rows, overhead, _plot(series, overhead_values, arms))
