"""The report's charts, drawn with matplotlib (Agg) and embedded as base64 PNG.

Each function takes result rows and returns a list of PNG data URIs (empty when there is nothing
to draw, so the section can say "not available"). Relative deltas are drawn in percent; the fixed
95% interval is the thick bar or filled band, the always-valid (sequential) interval the thin bar
or dashed lines beside it.
"""

from __future__ import annotations

import base64
import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from reports.data import BUCKET_SEGMENTS, as_dates
from reports.fmt import bucket_order, is_missing, segment_label, segment_rank
from reports.metrics import CURVE_METRIC, display, metric_label, sort_key

WORSE, BETTER, NEUTRAL, SEQ = "#cf222e", "#1a7f37", "#57606a", "#8250df"
FOREST_PANELS = 18
PALETTE = ["#0969da", "#bc4c00", "#1a7f37", "#8250df", "#cf222e", "#57606a"]


def png_uri(fig: plt.Figure) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=96)
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _finite(df: pd.DataFrame, *cols: str) -> pd.DataFrame:
    ok = np.ones(len(df), bool)
    for c in cols:
        ok &= np.isfinite(pd.to_numeric(df[c], errors="coerce").to_numpy(float))
    return df[ok]


def _colour(row: object) -> str:
    if not bool(row.is_significant):
        return NEUTRAL
    better = display(row.metric).higher_is_better
    if better is None:
        return SEQ
    return BETTER if (row.delta_abs > 0) == better else WORSE


def _label(row: object) -> str:
    return metric_label(row.metric, None if is_missing(row.quantile_p) else row.quantile_p)


def _forest_panel(ax: plt.Axes, rows: list, title: str) -> None:
    """One metric: a row per segment, fixed CI thick, sequential CI thin (clipped to the view)."""
    lo = min(r.ci_rel_lower for r in rows) * 100
    hi = max(r.ci_rel_upper for r in rows) * 100
    pad = max(0.15 * (hi - lo), 0.5)
    xmin, xmax = min(lo, 0) - pad, max(hi, 0) + pad
    y = np.arange(len(rows))[::-1]
    for yi, r in zip(y, rows, strict=True):
        c = _colour(r)
        if not (is_missing(r.seq_ci_rel_lower) or is_missing(r.seq_ci_rel_upper)):
            s_lo, s_hi = max(r.seq_ci_rel_lower * 100, xmin), min(r.seq_ci_rel_upper * 100, xmax)
            ax.plot([s_lo, s_hi], [yi - 0.25] * 2, color=SEQ, lw=1, alpha=0.8)
        ax.plot(
            [r.ci_rel_lower * 100, r.ci_rel_upper * 100],
            [yi, yi],
            color=c,
            lw=3,
            solid_capstyle="butt",
        )
        ax.plot(r.delta_rel * 100, yi, "o", color=c, ms=4)
    ax.set_yticks(y, [segment_label(r.segment_type, r.segment_value) for r in rows], fontsize=7)
    ax.set_xlim(xmin, xmax)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.axvline(0, color="black", lw=0.8)
    ax.set_title(title, fontsize=9)
    ax.tick_params(axis="x", labelsize=7)
    ax.grid(axis="x", alpha=0.3)


def forest(today: pd.DataFrame) -> list[str]:
    """Relative delta (%) per metric × platform: one small panel per metric, own x range.

    The thick bar is the fixed 95% CI, the thin one below it the always-valid CI (clipped to the
    panel, which is scaled to the fixed intervals so a wide sequential band cannot hide them).
    """
    rows = _finite(
        today[today["metric"] != CURVE_METRIC], "delta_rel", "ci_rel_lower", "ci_rel_upper"
    )
    rows = rows[rows["segment_type"].isin(("overall", "platform"))]
    if rows.empty:
        return []
    multi_arm = rows["treatment_arm"].nunique() > 1
    panels: dict[tuple, list] = {}
    for r in rows.itertuples(index=False):
        key = (
            *sort_key(r.metric, None if is_missing(r.quantile_p) else r.quantile_p),
            str(r.treatment_arm),
        )
        panels.setdefault(key, []).append(r)
    images = []
    keys = sorted(panels)
    for start in range(0, len(keys), FOREST_PANELS):
        chunk = keys[start : start + FOREST_PANELS]
        fig, axes = _grid(len(chunk), width=3.9, height=2.1)
        for ax, key in zip(axes, chunk, strict=False):
            items = sorted(panels[key], key=lambda r: segment_rank(r.segment_type, r.segment_value))
            title = _label(items[0]) + (f" · {items[0].treatment_arm}" if multi_arm else "")
            _forest_panel(ax, items, title)
        fig.supxlabel("relative delta (%) — thick: 95% CI, thin: always-valid CI", fontsize=8)
        fig.tight_layout()
        images.append(png_uri(fig))
    return images


def _segments(df: pd.DataFrame) -> list[tuple[str, str]]:
    seg = df[["segment_type", "segment_value"]].drop_duplicates()
    return sorted(
        zip(seg["segment_type"], seg["segment_value"], strict=True), key=lambda s: segment_rank(*s)
    )


def percentile_curve(today: pd.DataFrame) -> list[str]:
    """Relative delta of request latency at p1 … p99 with its 95% band, one panel per segment."""
    curve = _finite(
        today[today["metric"] == CURVE_METRIC],
        "quantile_p",
        "delta_rel",
        "ci_rel_lower",
        "ci_rel_upper",
    )
    if curve.empty:
        return []
    segments = _segments(curve)
    cols = min(3, len(segments))
    nrows = -(-len(segments) // cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(4.0 * cols, 2.9 * nrows), squeeze=False)
    for ax, (st, sv) in zip(axes.flat, segments, strict=False):
        d = curve[(curve["segment_type"] == st) & (curve["segment_value"] == sv)].sort_values(
            "quantile_p"
        )
        x = d["quantile_p"].to_numpy(float) * 100
        ax.fill_between(
            x, d["ci_rel_lower"] * 100, d["ci_rel_upper"] * 100, color=PALETTE[0], alpha=0.2, lw=0
        )
        ax.plot(x, d["delta_rel"] * 100, "o-", color=PALETTE[0], ms=3)
        ax.axhline(0, color="black", lw=0.8)
        ax.set_title(segment_label(st, sv), fontsize=9)
        ax.set_xlabel("percentile", fontsize=8)
        ax.grid(alpha=0.3)
    for ax in axes.flat[len(segments) :]:
        ax.set_visible(False)
    for ax in axes[:, 0]:
        ax.set_ylabel("request latency Δ (%)", fontsize=8)
    fig.tight_layout()
    return [png_uri(fig)]


def headline_keys(today: pd.DataFrame, limit: int) -> list[tuple[str, float | None]]:
    """(metric, quantile_p) pairs to chart: breaches and significant overall rows first."""
    overall = today[(today["segment_type"] == "overall") & (today["metric"] != CURVE_METRIC)]
    keyed = {}
    for r in overall.itertuples(index=False):
        key = (r.metric, None if is_missing(r.quantile_p) else float(r.quantile_p))
        rank = (
            0
            if (bool(r.is_significant) and bool(r.is_guardrail))
            else 1
            if bool(r.is_significant)
            else 2
        )
        keyed[key] = min(keyed.get(key, 3), rank)
    return sorted(keyed, key=lambda k: (keyed[k], sort_key(*k)))[:limit]


def _select(df: pd.DataFrame, metric: str, qp: float | None) -> pd.DataFrame:
    d = df[df["metric"] == metric]
    if qp is None:
        return d[d["quantile_p"].isna()] if "quantile_p" in d else d
    return d[(d["quantile_p"] - qp).abs() < 1e-9]


def _grid(n: int, width: float = 3.6, height: float = 2.5):
    cols = min(3, n)
    nrows = -(-n // cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(width * cols, height * nrows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, axes.flat


def _date_axis(ax: plt.Axes, days: pd.Series) -> None:
    """Ticks on the days themselves (at most eight), labelled MM-DD."""
    ticks = sorted(pd.to_datetime(pd.Series(days)).unique())
    step = max(1, -(-len(ticks) // 8))
    ax.set_xticks(ticks[::step], [pd.Timestamp(t).strftime("%m-%d") for t in ticks[::step]])
    ax.tick_params(axis="x", labelsize=7)
    ax.tick_params(axis="y", labelsize=7)


def cumulative(results: pd.DataFrame, today: pd.DataFrame, limit: int = 9) -> list[str]:
    """Experiment-to-date relative delta per as-of date: 95% band and the sequential band."""
    keys = headline_keys(today, limit)
    hist = results[(results["segment_type"] == "overall")]
    hist = hist.assign(_day=as_dates(hist["as_of_date"]))
    panels = [(k, _finite(_select(hist, *k), "delta_rel").sort_values("_day")) for k in keys]
    panels = [(k, d) for k, d in panels if len(d)]
    if not panels:
        return []
    fig, axes = _grid(len(panels))
    for ax, ((metric, qp), d) in zip(axes, panels, strict=False):
        x = pd.to_datetime(d["_day"])
        ax.fill_between(x, d["ci_rel_lower"] * 100, d["ci_rel_upper"] * 100, color=PALETTE[0], alpha=0.2, lw=0,
                        label="95% CI")  # fmt: skip
        ax.plot(x, d["seq_ci_rel_lower"] * 100, "--", color=SEQ, lw=1, label="always-valid CI")
        ax.plot(x, d["seq_ci_rel_upper"] * 100, "--", color=SEQ, lw=1)
        ax.plot(x, d["delta_rel"] * 100, "o-", color=PALETTE[0], ms=3, label="delta")
        ax.axhline(0, color="black", lw=0.8)
        ax.set_title(metric_label(metric, qp), fontsize=9)
        _date_axis(ax, x)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("Δ (%)", fontsize=8)
    axes[0].legend(fontsize=7, loc="best")
    fig.tight_layout()
    return [png_uri(fig)]


def buckets(today: pd.DataFrame, limit: int = 4) -> list[str]:
    """Relative delta with 95% CI per RTT, loss and bandwidth bucket, for the headline metrics."""
    rows = _finite(
        today[today["segment_type"].isin(BUCKET_SEGMENTS)],
        "delta_rel",
        "ci_rel_lower",
        "ci_rel_upper",
    )
    if rows.empty:
        return []
    keys = [k for k in headline_keys(today, 50) if len(_select(rows, *k))][:limit]
    types = [t for t in BUCKET_SEGMENTS if (rows["segment_type"] == t).any()]
    fig, axes = plt.subplots(1, len(types), figsize=(4.2 * len(types), 3.2), squeeze=False)
    for ax, seg_type in zip(axes[0], types, strict=True):
        part = rows[rows["segment_type"] == seg_type]
        values = sorted(part["segment_value"].unique(), key=bucket_order)
        width = 0.8 / max(1, len(keys))
        for i, key in enumerate(keys):
            d = _select(part, *key).set_index("segment_value").reindex(values)
            x = np.arange(len(values)) - 0.4 + width * (i + 0.5)
            mid = d["delta_rel"].to_numpy(float) * 100
            err = np.vstack(
                [
                    mid - d["ci_rel_lower"].to_numpy(float) * 100,
                    d["ci_rel_upper"].to_numpy(float) * 100 - mid,
                ]
            )
            ax.errorbar(x, mid, yerr=err, fmt="o", ms=4, capsize=2, color=PALETTE[i % len(PALETTE)],
                        label=metric_label(*key))  # fmt: skip
        ax.set_xticks(np.arange(len(values)), values, fontsize=7, rotation=20)
        ax.axhline(0, color="black", lw=0.8)
        ax.set_title(seg_type.replace("_", " "), fontsize=9)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("relative delta (%)", fontsize=8)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    return [png_uri(fig)]


def daily_values(daily: pd.DataFrame | None, today: pd.DataFrame, limit: int = 6) -> list[str]:
    """The metric per arm per day (not cumulative), overall segment: novelty and day effects."""
    if daily is None or daily.empty:
        return []
    overall = daily[daily["segment_type"] == "overall"]
    overall = overall.assign(_day=pd.to_datetime(as_dates(overall["event_date"])))
    keys = [k for k in headline_keys(today, 50) if len(_finite(_select(overall, *k), "value"))][
        :limit
    ]
    if not keys:
        return []
    fig, axes = _grid(len(keys))
    for ax, key in zip(axes, keys, strict=False):
        d = _finite(_select(overall, *key), "value")
        disp = display(key[0])
        for i, (arm, part) in enumerate(sorted(d.groupby("arm"), key=lambda a: str(a[0]))):
            part = part.sort_values("_day")
            ax.plot(
                part["_day"],
                part["value"] * disp.scale,
                "o-",
                ms=3,
                color=PALETTE[i % len(PALETTE)],
                label=str(arm),
            )
        ax.set_title(f"{metric_label(*key)}" + (f" ({disp.unit})" if disp.unit else ""), fontsize=9)
        _date_axis(ax, d["_day"])
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    return [png_uri(fig)]
