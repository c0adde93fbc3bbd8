"""The report's charts, drawn with matplotlib (Agg) and embedded as base64 PNG.

Each function takes result rows and returns a list of PNG data URIs (empty when there is nothing
to draw, so the section can say "not available"). Relative deltas are drawn in percent; the fixed
95% interval is the thick bar or filled band, the always-valid (sequential) interval the thin bar
or dashed lines beside it.
"""

from __future__ import annotations

import base64
import io
import math
from dataclasses import dataclass

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


@dataclass(frozen=True)
class Chart:
    """One embedded PNG and the titles of the panels drawn in it (the page lists them on the
    image, so a reader — or a test — knows what the picture holds without decoding it)."""

    src: str
    panels: tuple[str, ...] = ()

    def __str__(self) -> str:
        return self.src


def png_uri(fig: plt.Figure, panels: list[str] | tuple[str, ...] = ()) -> Chart:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=96)
    plt.close(fig)
    return Chart("data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii"), tuple(panels))


def _titles(axes) -> list[Chart]:
    return [ax.get_title() for ax in axes if ax.get_visible() and ax.get_title()]


def _finite(df: pd.DataFrame, *cols: str) -> pd.DataFrame:
    ok = np.ones(len(df), bool)
    for c in cols:
        ok &= np.isfinite(pd.to_numeric(df[c], errors="coerce").to_numpy(float))
    return df[ok]


#: fewer units than this in an arm makes a segment "small": its interval rests on a normal
#: approximation the data may not support yet (Kohavi, Deng, Longbotham and Xu 2014, "Seven rules
#: of thumb for website experimenters", rule 7: n > 355·s² units for a metric of skewness s; the
#: sufficient statistics carry no third moment, so s = 1 here, the mildest skew a QoE metric has)
SMALL_SEGMENT_UNITS = 355


def is_small(row: object) -> bool:
    """A comparison whose smaller arm has fewer than :data:`SMALL_SEGMENT_UNITS` units."""
    n = [getattr(row, c, None) for c in ("n_control", "n_treatment")]
    return any(not is_missing(v) and float(v) < SMALL_SEGMENT_UNITS for v in n)


def relative_defined(rows: pd.DataFrame) -> bool:
    """Whether a metric's rows can be drawn as relative deltas: its overall (else first) row
    has a finite relative delta and interval (not where the control is 0)."""
    if rows.empty:
        return False
    ov = rows[rows["segment_type"] == "overall"] if "segment_type" in rows else rows
    r = (ov if len(ov) else rows).iloc[0]
    return not any(is_missing(r[c]) for c in ("delta_rel", "ci_rel_lower", "ci_rel_upper"))


@dataclass(frozen=True)
class Scale:
    """How a metric's deltas are drawn: relative (percent) or absolute (its unit)."""

    relative: bool
    factor: float
    unit: str

    @property
    def cols(self) -> tuple[str, str, str, str, str]:
        p = "rel" if self.relative else "abs"
        return (f"delta_{p}", f"ci_{p}_lower", f"ci_{p}_upper", f"seq_ci_{p}_lower", f"seq_ci_{p}_upper")

    @property
    def axis(self) -> str:
        return "Δ (%)" if self.relative else f"Δ ({self.unit})" if self.unit else "Δ"

    def values(self, row: object) -> tuple[float, ...]:
        return tuple(_num(getattr(row, c, None)) * self.factor for c in self.cols)


def scale_for(metric: str, rows: pd.DataFrame) -> Scale:
    """Relative where defined, else absolute in the metric's display unit (a control of 0:
    HoL-blocked time without forced HoL blocking)."""
    if relative_defined(rows):
        return Scale(True, 100.0, "%")
    disp = display(metric)
    return Scale(False, disp.scale, disp.abs_unit)


def _num(value: object) -> float:
    return math.nan if is_missing(value) else float(value)


def axis_limits(estimates: list[float], lows: list[float], highs: list[float], widths: list[float],
                marks: tuple[float, ...] = (0.0,)) -> tuple[float, float]:  # fmt: skip
    """An axis around what matters: 0, the marks and the estimates, with one typical interval
    width of room; intervals reach as far as they go within that room (beyond: an arrow)."""
    core = [v for v in (*marks, *estimates) if math.isfinite(v)]
    w = float(np.median([x for x in widths if math.isfinite(x) and x > 0] or [0.0]))
    lo, hi = min(core), max(core)
    room = w or (hi - lo) or 1.0
    fin_lo = [v for v in lows if math.isfinite(v)]
    fin_hi = [v for v in highs if math.isfinite(v)]
    xmin = max(min([lo, *fin_lo]), lo - room)
    xmax = min(max([hi, *fin_hi]), hi + room)
    pad = 0.05 * (xmax - xmin or 1.0)
    return xmin - pad, xmax + pad


def clipped(ax: plt.Axes, y: float, lo: float, hi: float, xlim: tuple[float, float], colour: str,
            lw: float, alpha: float = 1.0) -> None:  # fmt: skip
    """An interval on the line ``y``, clipped to ``xlim``; a clipped (or unbounded, NaN) end is
    drawn as an arrow head on the axis's edge."""
    xmin, xmax = xlim
    lo_c = lo if math.isfinite(lo) and lo >= xmin else xmin
    hi_c = hi if math.isfinite(hi) and hi <= xmax else xmax
    if lo_c > xmax or hi_c < xmin:
        return
    ax.plot([lo_c, hi_c], [y, y], color=colour, lw=lw, alpha=alpha, solid_capstyle="butt")
    if lo_c != lo:
        ax.plot(xmin, y, marker="<", color=colour, ms=4 + lw, alpha=alpha, clip_on=False)
    if hi_c != hi:
        ax.plot(xmax, y, marker=">", color=colour, ms=4 + lw, alpha=alpha, clip_on=False)


def point(ax: plt.Axes, y: float, x: float, xlim: tuple[float, float], colour: str,
          hollow: bool = False) -> None:  # fmt: skip
    """The estimate; outside the axis, at its edge."""
    x = min(max(x, xlim[0]), xlim[1])
    ax.plot(x, y, "o", color=colour, ms=4, mfc="white" if hollow else colour, clip_on=False)


def _colour(row: object) -> str:
    if not bool(row.is_significant):
        return NEUTRAL
    better = display(row.metric).higher_is_better
    if better is None:
        return SEQ
    return BETTER if (row.delta_abs > 0) == better else WORSE


def _label(row: object) -> str:
    return metric_label(row.metric, None if is_missing(row.quantile_p) else row.quantile_p)


MARKERS = ("o", "s", "D", "^", "v", "P")


def _panel(ax: plt.Axes, items: list[tuple[str, list]], title: str, scale: Scale,
           marks: tuple[float, ...] = (), arms: list[str] | None = None) -> None:  # fmt: skip
    """One metric: a line per segment (each treatment arm a marker shape, offset), the fixed
    interval clipped to the panel with arrows (the always-valid one is on the decision cards and
    the cumulative chart: per segment it would be arrows everywhere); small segments hollow and
    labelled with their units; ``marks``: margin / minimum effect."""
    rows = [r for _, rs in items for r in rs]
    vals = {id(r): scale.values(r) for r in rows}
    big = [vals[id(r)] for r in rows if not is_small(r)] or list(vals.values())
    xlim = axis_limits([v[0] for v in big], [v[1] for v in vals.values()], [v[2] for v in vals.values()],
                       [v[2] - v[1] for v in big], (0.0, *marks))  # fmt: skip
    arms = arms or sorted({str(r.treatment_arm) for r in rows})
    step = 0.5 / max(len(arms), 1)
    y = np.arange(len(items))[::-1]
    labels = []
    for yi, (label, rs) in zip(y, items, strict=True):
        small = any(is_small(r) for r in rs)
        for r in rs:
            i = arms.index(str(r.treatment_arm)) if str(r.treatment_arm) in arms else 0
            yy = yi + (i - (len(arms) - 1) / 2) * step
            v, c = vals[id(r)], _colour(r)
            clipped(ax, yy, v[1], v[2], xlim, c, 3, 0.45 if small else 1.0)
            x = min(max(v[0], xlim[0]), xlim[1])
            ax.plot(x, yy, MARKERS[i % len(MARKERS)], color=c, ms=4, mfc="white" if small else c, clip_on=False)
        labels.append(_small_text(label, rs) if small else label)
    ax.set_yticks(y, labels, fontsize=7)
    for tick, (_, rs) in zip(ax.get_yticklabels(), items, strict=True):
        if any(is_small(r) for r in rs):
            tick.set_color("#9a6700")
    ax.set_xlim(*xlim)
    ax.set_ylim(-0.7, len(items) - 0.3)
    ax.axvline(0, color="black", lw=0.8)
    for m in marks:
        if xlim[0] <= m <= xlim[1]:
            ax.axvline(m, color="#9a6700", lw=0.9, ls="--")
    ax.set_title(title, fontsize=9)
    ax.set_xlabel(scale.axis, fontsize=7)
    ax.tick_params(axis="x", labelsize=7)
    ax.grid(axis="x", alpha=0.3)


def panel_grid(n: int, label_chars: int, rows: int, cols: int = 3, width: float = 4.3,
               footer: float = 0.0, header: float = 0.0) -> tuple[plt.Figure, list[plt.Axes]]:  # fmt: skip
    """``n`` forest panels laid out by hand: room for ``label_chars`` of y labels, ``rows``
    lines per panel, a title above and the x axis below each. Placing axes directly is an order
    of magnitude cheaper than ``tight_layout`` over dozens of panels (seconds per report)."""
    cols = min(cols, n)
    nrows = -(-n // cols)
    label = 0.12 + 0.052 * label_chars  # inches of 7-point labels
    plot_h = 0.17 * rows + 0.25
    cell_h = plot_h + 0.75  # title and x axis
    fig_w, fig_h = width * cols, cell_h * nrows + footer + header
    fig = plt.figure(figsize=(fig_w, fig_h))
    axes = []
    for i in range(n):
        r, c = divmod(i, cols)
        left = c * width + label
        bottom = fig_h - header - (r + 1) * cell_h + 0.45
        axes.append(fig.add_axes((left / fig_w, bottom / fig_h, (width - label - 0.2) / fig_w, plot_h / fig_h)))
    return fig, axes


def _arm_legend(fig: plt.Figure, arms: list[str]) -> None:
    if len(arms) > 1:
        handles = [plt.Line2D([], [], marker=MARKERS[i % len(MARKERS)], ls="", color="#57606a", label=a)
                   for i, a in enumerate(arms)]  # fmt: skip
        fig.legend(handles=handles, loc="upper right", fontsize=7, ncol=len(arms))


def _seg_text(r: object) -> str:
    return segment_label(r.segment_type, r.segment_value)


def _small_text(label: str, rows: list) -> str:
    n = min((float(getattr(r, k)) for r in rows for k in ("n_control", "n_treatment")
             if not is_missing(getattr(r, k, None))), default=math.nan)  # fmt: skip
    return f"{label} (small: {n:,.0f} units)"


def _label_chars(panels) -> int:
    """The longest y label of ``panels`` (lists of (label, rows)), small-segment note included."""
    return max((len(_small_text(lab, rs)) if any(is_small(r) for r in rs) else len(lab)
                for items in panels for lab, rs in items), default=8)  # fmt: skip


def _has_delta(df: pd.DataFrame, scale: Scale) -> pd.DataFrame:
    return _finite(df, scale.cols[0])


def forest(today: pd.DataFrame, exclude: set | frozenset = frozenset()) -> list[Chart]:
    """Delta per metric × platform: one small panel per metric (and treatment arm), own scale —
    relative where defined, absolute in the metric's unit where the control is 0.

    The thick bar is the fixed 95% CI, the thin one below it the always-valid CI, both clipped
    to the panel (an arrow where they go beyond). ``exclude``: (metric, quantile_p) keys drawn
    elsewhere (the declared metrics' segment panels).
    """
    rows = today[(today["metric"] != CURVE_METRIC) & today["segment_type"].isin(("overall", "platform"))]
    if rows.empty:
        return []
    multi_arm = rows["treatment_arm"].nunique() > 1
    panels: dict[tuple, list] = {}
    scales: dict[tuple, Scale] = {}
    for (metric, qp, arm), part in rows.groupby(["metric", rows["quantile_p"].fillna(-1.0), "treatment_arm"]):
        q = None if qp < 0 else float(qp)
        if (metric, None if q is None else round(q, 6)) in exclude:
            continue
        scale = scale_for(metric, part)
        part = _has_delta(part, scale)
        if part.empty:
            continue
        key = (*sort_key(metric, q), str(arm))
        panels[key], scales[key] = list(part.itertuples(index=False)), scale
    images = []
    keys = sorted(panels)
    for start in range(0, len(keys), FOREST_PANELS):
        chunk = keys[start : start + FOREST_PANELS]
        items = {k: [(_seg_text(r), [r]) for r in sorted(panels[k], key=lambda r: segment_rank(r.segment_type, r.segment_value))]
                 for k in chunk}  # fmt: skip
        fig, axes = panel_grid(len(chunk), _label_chars(items.values()), max(len(v) for v in items.values()),
                               width=4.3, footer=0.3)  # fmt: skip
        for ax, key in zip(axes, chunk, strict=True):
            first = items[key][0][1][0]
            _panel(ax, items[key], _label(first) + (f" · {first.treatment_arm}" if multi_arm else ""), scales[key])
        fig.text(0.5, 0.01, "95% CI; arrows: the interval goes on beyond the axis; hollow: a small segment",
                 ha="center", va="bottom", fontsize=8)  # fmt: skip
        images.append(png_uri(fig, _titles(axes)))
    return images


#: segment types of the declared metrics' small multiples, in reading order
PANEL_SEGMENTS = ("overall", "platform", *BUCKET_SEGMENTS)


def segments(today: pd.DataFrame, cards: list) -> list[Chart]:
    """The declared metrics by segment, as small multiples: one panel per metric (each card of
    :func:`reports.decision.metric_cards`), a line per segment (overall, platforms, RTT, loss and
    bandwidth buckets) and treatment arm, the card's margin or minimum effect as a dashed line,
    on the card's scale (absolute where the relative delta is undefined or the margin absolute)."""
    part = today[today["segment_type"].isin(PANEL_SEGMENTS)]
    arms = sorted({str(a) for a in part["treatment_arm"]})
    panels = []
    for card in cards:
        c0 = card.arms[0]
        rows = _select(part[part["metric"] == c0.metric], c0.metric, c0.quantile_p)
        scale = Scale(True, 100.0, "%") if not c0.absolute else Scale(False, display(c0.metric).scale, c0.axis_unit)
        if scale.relative and not relative_defined(rows):
            scale = scale_for(c0.metric, rows)
        rows = _has_delta(rows, scale)
        if rows.empty:
            continue
        marks = tuple(m for m in (c0.threshold if card.role == "guardrail" else math.nan,
                                  c0.minimum_effect if c0.minimum_effect is not None else math.nan)
                      if math.isfinite(m) and (scale.relative != c0.absolute))  # fmt: skip
        groups: dict[tuple, list] = {}
        for r in rows.itertuples(index=False):
            groups.setdefault((segment_rank(r.segment_type, r.segment_value), r.segment_type,
                               segment_label(r.segment_type, r.segment_value)), []).append(r)  # fmt: skip
        ordered = sorted(groups.items(), key=lambda kv: (PANEL_SEGMENTS.index(kv[0][1]), kv[0][0]))
        items = [(label, rs) for (_, _, label), rs in ordered]
        title = f"{card.role}: {card.label}"
        panels.append((items, title, scale, marks))
    if not panels:
        return []
    fig, axes = panel_grid(len(panels), _label_chars(p[0] for p in panels), max(len(p[0]) for p in panels),
                           header=0.3 if len(arms) > 1 else 0.0)  # fmt: skip
    for ax, (items, title, scale, marks) in zip(axes, panels, strict=True):
        _panel(ax, items, title, scale, marks, arms)
    _arm_legend(fig, arms)
    return [png_uri(fig, _titles(axes))]


def _segments(df: pd.DataFrame) -> list[tuple[str, str]]:
    seg = df[["segment_type", "segment_value"]].drop_duplicates()
    return sorted(
        zip(seg["segment_type"], seg["segment_value"], strict=True), key=lambda s: segment_rank(*s)
    )


def percentile_curve(today: pd.DataFrame) -> list[Chart]:
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
    return [png_uri(fig, _titles(axes.flat))]


def headline_keys(today: pd.DataFrame, limit: int, first: list | tuple = ()) -> list[tuple[str, float | None]]:
    """(metric, quantile_p) pairs to chart: ``first`` (the declared metrics, in order), then
    breaches and significant overall rows."""
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
    lead = [k for k in first if any(_same_key(k, o) for o in keyed)]
    lead = [next(o for o in keyed if _same_key(k, o)) for k in lead]
    rest = sorted((k for k in keyed if k not in lead), key=lambda k: (keyed[k], sort_key(*k)))
    return (lead + rest)[:limit]


def _same_key(a: tuple, b: tuple) -> bool:
    qa, qb = a[1], b[1]
    return a[0] == b[0] and ((qa is None and qb is None) or (qa is not None and qb is not None and abs(qa - qb) < 1e-9))


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
    return fig, list(axes.flat)


def _date_axis(ax: plt.Axes, days: pd.Series) -> None:
    """Ticks on the days themselves (at most eight), labelled MM-DD."""
    ticks = sorted(pd.to_datetime(pd.Series(days)).unique())
    step = max(1, -(-len(ticks) // 8))
    ax.set_xticks(ticks[::step], [pd.Timestamp(t).strftime("%m-%d") for t in ticks[::step]])
    ax.tick_params(axis="x", labelsize=7)
    ax.tick_params(axis="y", labelsize=7)


def cumulative(results: pd.DataFrame, today: pd.DataFrame, limit: int = 9, first: list | tuple = ()) -> list[Chart]:
    """Experiment-to-date delta per as-of date and treatment arm: 95% band and the always-valid
    band; relative where defined, absolute where the control is 0. ``first``: the declared
    metrics, drawn first."""
    keys = headline_keys(today, limit, first)
    hist = results[(results["segment_type"] == "overall")]
    hist = hist.assign(_day=as_dates(hist["as_of_date"]))
    panels = []
    for k in keys:
        d = _select(hist, *k)
        scale = scale_for(k[0], _select(today[today["segment_type"] == "overall"], *k))
        d = _finite(d, scale.cols[0]).sort_values("_day")
        if len(d):
            panels.append((k, d, scale))
    if not panels:
        return []
    arms = sorted({str(a) for _, d, _ in panels for a in d["treatment_arm"]})
    fig, axes = _grid(len(panels))
    for ax, ((metric, qp), d, scale) in zip(axes, panels, strict=False):
        for i, (arm, part) in enumerate(d.groupby("treatment_arm", sort=True)):
            x = pd.to_datetime(part["_day"])
            est, lo, hi, slo, shi = (part[c].astype(float) * scale.factor for c in scale.cols)
            colour = PALETTE[i % len(PALETTE)]
            tag = f" {arm}" if len(arms) > 1 else ""
            ax.fill_between(x, lo, hi, color=colour, alpha=0.18, lw=0, label=f"95% CI{tag}")
            ax.plot(x, slo, "--", color=SEQ if len(arms) == 1 else colour, lw=1, label=f"always-valid CI{tag}")
            ax.plot(x, shi, "--", color=SEQ if len(arms) == 1 else colour, lw=1)
            ax.plot(x, est, "o-", color=colour, ms=3, label=f"delta{tag}")
        ax.axhline(0, color="black", lw=0.8)
        ax.set_title(metric_label(metric, qp) + ("" if scale.relative else " (absolute: control is 0)"), fontsize=9)
        ax.set_ylabel(scale.axis, fontsize=8)
        _date_axis(ax, pd.to_datetime(d["_day"]))
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7, loc="best")
    fig.tight_layout()
    return [png_uri(fig, _titles(axes))]


def buckets(today: pd.DataFrame, limit: int = 4, first: list | tuple = ()) -> list[Chart]:
    """Relative delta with 95% CI per RTT, loss and bandwidth bucket, for the headline metrics
    (``first``: the declared ones) and every treatment arm; buckets in their natural order."""
    rows = _finite(
        today[today["segment_type"].isin(BUCKET_SEGMENTS)],
        "delta_rel",
        "ci_rel_lower",
        "ci_rel_upper",
    )
    if rows.empty:
        return []
    keys = [k for k in headline_keys(today, 50, first) if len(_select(rows, *k))][:limit]
    arms = sorted({str(a) for a in rows["treatment_arm"]})
    series = [(k, a) for k in keys for a in arms if len(_select(rows[rows["treatment_arm"] == a], *k))]
    types = [t for t in BUCKET_SEGMENTS if (rows["segment_type"] == t).any()]
    fig, axes = plt.subplots(1, len(types), figsize=(4.2 * len(types), 3.2), squeeze=False)
    for ax, seg_type in zip(axes[0], types, strict=True):
        part = rows[rows["segment_type"] == seg_type]
        values = sorted(part["segment_value"].unique(), key=bucket_order)
        width = 0.8 / max(1, len(series))
        for i, (key, arm) in enumerate(series):
            d = _select(part[part["treatment_arm"] == arm], *key).drop_duplicates("segment_value")
            d = d.set_index("segment_value").reindex(values)
            x = np.arange(len(values)) - 0.4 + width * (i + 0.5)
            mid = d["delta_rel"].to_numpy(float) * 100
            err = np.vstack(
                [
                    mid - d["ci_rel_lower"].to_numpy(float) * 100,
                    d["ci_rel_upper"].to_numpy(float) * 100 - mid,
                ]
            )
            label = metric_label(*key) + (f" · {arm}" if len(arms) > 1 else "")
            ax.errorbar(x, mid, yerr=err, fmt=MARKERS[arms.index(arm) % len(MARKERS)], ms=4, capsize=2,
                        color=PALETTE[keys.index(key) % len(PALETTE)], label=label)  # fmt: skip
        ax.set_xticks(np.arange(len(values)), values, fontsize=7, rotation=20)
        ax.axhline(0, color="black", lw=0.8)
        ax.set_title(seg_type.replace("_", " "), fontsize=9)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("relative delta (%)", fontsize=8)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    return [png_uri(fig, [metric_label(*k) for k in keys])]


def daily_values(daily: pd.DataFrame | None, today: pd.DataFrame, limit: int = 6, first: list | tuple = ()) -> list[Chart]:
    """The metric per arm per day (not cumulative), overall segment: novelty and day effects."""
    if daily is None or daily.empty:
        return []
    overall = daily[daily["segment_type"] == "overall"]
    overall = overall.assign(_day=pd.to_datetime(as_dates(overall["event_date"])))
    keys = [k for k in headline_keys(today, 50, first) if len(_finite(_select(overall, *k), "value"))][:limit]
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
    return [png_uri(fig, _titles(axes))]
