"""Scorecard, headline findings, power lines and the percentile table, from the day's results.

Everything here is a pure function of the stats engine's output rows (stats/schema.py
OUTPUT_COLUMNS); the numbers are formatted by :mod:`reports.fmt`. Significance is the
corrected one (``is_significant``: ``p_value_adjusted`` < alpha within its family); guardrail
breaches (a guardrail metric significantly worse) always come first.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from reports.data import SCORECARD_SEGMENTS
from reports.fmt import (
    MISSING,
    Effect,
    Power,
    arm_values,
    effect,
    is_missing,
    number,
    percent,
    power,
    segment_rank,
    verdict,
)
from reports.metrics import CURVE_MEAN_METRIC, CURVE_METRIC, display, percentile_name, sort_key
from reports.plots import PANEL_SEGMENTS, is_small

#: most headline lines before "and N more"
MAX_HEADLINES = 12


@dataclass(frozen=True)
class ScoreRow:
    """One comparison as a scorecard line."""

    metric: str
    quantile_p: float | None
    segment_type: str
    treatment_arm: str
    control: str
    treatment: str
    effect: Effect
    p_adjusted: str
    significant: bool
    seq_significant: bool
    verdict: str
    guardrail: bool
    breach: bool
    trustworthy: bool
    flags: str
    segment_rank: tuple = ()
    power: Power | None = None
    units: str = MISSING
    small: bool = False

    @property
    def css(self) -> str:
        classes = []
        if self.breach:
            classes.append("breach")
        elif self.significant:
            classes.append(
                "sig "
                + (
                    "worse"
                    if self.verdict == "worse"
                    else "better"
                    if self.verdict == "better"
                    else ""
                )
            )
        if not self.trustworthy:
            classes.append("untrusted")
        if self.small:
            classes.append("small")
        return " ".join(c.strip() for c in classes)


def _qp(value: object) -> float | None:
    return None if is_missing(value) else float(value)


def _p_text(p: float) -> str:
    if is_missing(p):
        return MISSING
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def score_rows(results: pd.DataFrame) -> list[ScoreRow]:
    """Display rows for ``results`` (any segments), guardrail breaches first, then reading order."""
    rows = []
    for r in results.itertuples(index=False):
        if r.metric == CURVE_METRIC:
            continue
        significant = bool(r.is_significant) and not is_missing(r.p_value_adjusted)
        v = (
            "not computable"
            if is_missing(r.p_value)
            else verdict(significant, r.delta_abs, r.metric)
        )
        guard = bool(r.is_guardrail)
        flags = [f for f in str(r.flags or "").split(";") if f and f not in ("cuped",)]
        control, treatment = arm_values(r.value_control, r.value_treatment, display(r.metric))
        rows.append(
            ScoreRow(
                metric=r.metric,
                quantile_p=_qp(r.quantile_p),
                segment_type=r.segment_type,
                treatment_arm=str(r.treatment_arm),
                control=control,
                treatment=treatment,
                effect=effect(r),
                p_adjusted=_p_text(r.p_value_adjusted),
                significant=significant,
                seq_significant=bool(r.is_seq_significant),
                verdict=v,
                guardrail=guard,
                breach=guard and significant and v in ("worse", "higher", "lower"),
                trustworthy=bool(r.is_trustworthy),
                flags=", ".join(flags),
                segment_rank=segment_rank(r.segment_type, r.segment_value),
                power=power(r),
                units=f"{number(r.n_control, 0)} / {number(r.n_treatment, 0)}",
                small=is_small(r),
            )
        )
    rows.sort(
        key=lambda s: (
            not s.breach,
            sort_key(s.metric, s.quantile_p),
            s.segment_type != "overall",
            s.segment_type,
            s.segment_rank,
            s.treatment_arm,
        )
    )
    return rows


def scorecard(today: pd.DataFrame) -> tuple[list[ScoreRow], list[ScoreRow]]:
    """(overall and per-platform rows, network-condition rows) of the day."""
    main = today["segment_type"].isin(SCORECARD_SEGMENTS)
    return score_rows(today[main]), score_rows(today[~main])


def segment_rows(today: pd.DataFrame, metric: str, quantile_p: float | None) -> list[ScoreRow]:
    """One metric's rows in every segment of the small multiples (overall, platforms, RTT /
    loss / bandwidth buckets), in that order: the drill-down under its panel."""
    d = today[(today["metric"] == metric) & today["segment_type"].isin(PANEL_SEGMENTS)]
    if quantile_p is None:
        d = d[d["quantile_p"].isna()]
    else:
        d = d[(d["quantile_p"] - quantile_p).abs() < 1e-9]
    rows = score_rows(d)
    return sorted(rows, key=lambda r: (PANEL_SEGMENTS.index(r.segment_type), r.segment_rank, r.treatment_arm))


#: segments of a metric group's own section: overall and the network-condition buckets
GROUP_SEGMENTS = ("overall", "rtt_bucket", "loss_bucket", "bandwidth_bucket")


def group_rows(today: pd.DataFrame, group: str) -> list[ScoreRow]:
    """Rows of the metrics of one registry ``group`` (e.g. qlog), overall and per network
    condition: every arm's value and the delta with its CIs."""
    if not len(today):
        return []
    mine = today["metric"].map(lambda m: display(m).group == group) & today["segment_type"].isin(GROUP_SEGMENTS)
    return score_rows(today[mine])


@dataclass(frozen=True)
class Headlines:
    breaches: list[str]
    findings: list[str]
    more: int
    summary: str


def headlines(rows: list[ScoreRow], alpha: float, correction: str) -> Headlines:
    """The seeds' bullet lines for every significant scorecard row, breaches first."""
    breaches = [f"{r.effect.line} — guardrail {r.verdict}" for r in rows if r.breach]
    sig = sorted(
        (r for r in rows if r.significant and not r.breach),
        key=lambda r: r.segment_type != "overall",
    )
    findings = [f"{r.effect.line} — {r.verdict}" for r in sig]
    n = len(rows)
    n_sig = len(sig) + len(breaches)
    corr = {
        "bh": "Benjamini–Hochberg",
        "holm": "Holm",
        "bonferroni": "Bonferroni",
        "none": "no",
    }.get(correction, correction)
    if n == 0:
        summary = "No comparisons are available for this day."
    elif n_sig == 0:
        summary = f"No significant difference on any of the {n} comparisons ({corr} correction, α = {alpha:g})."
    else:
        summary = (
            f"{n_sig} of {n} comparisons differ significantly ({corr} correction, α = {alpha:g})."
        )
    shown = findings[:MAX_HEADLINES]
    return Headlines(breaches, shown, len(findings) - len(shown), summary)


@dataclass(frozen=True)
class PowerLine:
    label: str
    arm: str
    units: str
    mde: str
    observed: str
    power: Power | None = None


def power_lines(today: pd.DataFrame) -> list[PowerLine]:
    """Minimum detectable effect per metric (overall segment) at the current number of units,
    and (when the results carry them, :data:`reports.fmt.POWER_COLUMNS`) at the planned size,
    the target effect, the underpowered flag and the always-valid interval's extra width."""
    overall = today[(today["segment_type"] == "overall") & (today["metric"] != CURVE_METRIC)]
    out = []
    for r in sorted(
        overall.itertuples(index=False), key=lambda r: sort_key(r.metric, _qp(r.quantile_p))
    ):
        e = effect(r)
        out.append(
            PowerLine(
                label=e.label,
                arm=str(r.treatment_arm),
                units=f"{number(r.n_control, 0)} / {number(r.n_treatment, 0)}",
                mde=e.mde,
                observed=f"{e.delta} ({e.rel})",
                power=power(r),
            )
        )
    return out


@dataclass(frozen=True)
class PercentileTable:
    """Relative delta by percentile per segment (Langley et al. 2017, Table 1 shape)."""

    columns: list[str]
    rows: list[tuple[str, list[tuple[str, bool]]]]


def percentile_table(today: pd.DataFrame) -> PercentileTable | None:
    """Rows: overall then platforms; columns: mean, p1 … p99; cells: (relative delta, significant)."""
    curve = today[today["metric"] == CURVE_METRIC]
    if curve.empty:
        return None
    ps = sorted(curve["quantile_p"].dropna().unique())
    mean = today[today["metric"] == CURVE_MEAN_METRIC]
    columns = ["mean", *[percentile_name(p) for p in ps]]
    rows = []
    segments = curve[["segment_type", "segment_value"]].drop_duplicates()
    ordered = sorted(
        zip(segments["segment_type"], segments["segment_value"], strict=True),
        key=lambda s: segment_rank(*s),
    )
    for seg_type, seg_value in ordered:
        cells = []
        for source, p in [(mean, None), *[(curve, p) for p in ps]]:
            sel = source[
                (source["segment_type"] == seg_type) & (source["segment_value"] == seg_value)
            ]
            if p is not None:
                sel = sel[(sel["quantile_p"] - p).abs() < 1e-9]
            if sel.empty:
                cells.append((MISSING, False))
            else:
                r = sel.iloc[0]
                cells.append((percent(r["delta_rel"]), bool(r["is_significant"])))
        rows.append(("overall" if seg_type == "overall" else str(seg_value), cells))
    return PercentileTable(columns, rows)
