"""ReportData -> self-contained HTML and a Markdown summary (pure; no Spark, no I/O).

The HTML embeds its charts as base64 PNG (the decision cards' bars as inline SVG) and its CSS
inline, so the file can be mailed or opened from disk. Its first screen (1,400 × 900) is the
decision: the health banner, the verdict of each treatment arm with its reasons, one card per
success metric and guardrail, the mechanism check and any revision since publication; below come
the declared metrics by segment, the exploratory metrics (folded), the plots and the full table
(folded). Sections whose source is missing say "not available" instead of failing.
"""

from __future__ import annotations

from dataclasses import dataclass

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from quicexp.metrics import load_metrics
from reports import plots
from reports.data import ReportData
from reports.decision import declared_keys, metric_cards, minimum_effects, views
from reports.fmt import power_columns
from reports.header import build_header
from reports.health import health
from reports.metrics import using
from reports.multipath import multipath_section
from reports.revision import declared_roles, publication, revisions
from reports.scorecard import (
    group_rows,
    headlines,
    percentile_table,
    power_lines,
    scorecard,
    segment_rows,
)

_ENV = Environment(
    loader=PackageLoader("reports", "templates"),
    autoescape=select_autoescape(["html", "j2"], default_for_string=True),
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
_MD_ENV = Environment(
    loader=PackageLoader("reports", "templates"), autoescape=False, undefined=StrictUndefined, trim_blocks=True,
    lstrip_blocks=True,
)  # fmt: skip


@dataclass(frozen=True)
class RenderedReport:
    html: str
    markdown: str
    trustworthy: bool
    significant: int


def _setting(today, column: str, default):
    values = today[column].dropna().unique() if column in today and len(today) else []
    return values[0] if len(values) else default


def decision_context(data: ReportData) -> dict:
    """The first screen: verdicts (one per treatment arm), cards, health and revisions."""
    today = data.today
    verdicts, tests = data.on_day(data.decisions), data.on_day(data.decision_tests)
    decisions = views(verdicts, tests, minimum_effects(data.experiment)) if verdicts is not None else []
    decisions = sorted(decisions, key=lambda v: str(v.treatment_arm))
    cards = metric_cards(decisions)
    current = publication(data.results, data.decisions, declared_roles(data.decision_tests))
    revised = revisions(data.published, current)
    this_day = next((r for r in revised if str(r.as_of_date) == data.day.isoformat()), None)
    return {
        "decisions": decisions,
        "cards": [c for c in cards if c.role != "mechanism"],
        "mechanism": [c for c in cards if c.role == "mechanism"],
        "health": health(today, data.on_day(data.health)),
        "revised_today": this_day,
        "revised_earlier": [r for r in revised if r is not this_day],
        "card_revisions": {(c.arm, c.item): c for c in (this_day.changes if this_day else [])},
        "declared": declared_keys(data.decision_tests, data.experiment),
        "all_cards": cards,
    }


def context(data: ReportData) -> dict:
    """Everything the templates show, as plain strings, lists and data URIs."""
    today = data.today
    header = build_header(data)
    main_rows, network_rows = scorecard(today)
    alpha = float(_setting(today, "alpha", 0.05))
    correction = str(_setting(today, "correction_method", "bh"))
    arm_order = [a.name for a in sorted(data.experiment.arms, key=lambda a: not a.is_control)]
    d = decision_context(data)
    first = [(c.arms[0].metric, c.arms[0].quantile_p) for c in d["all_cards"]]
    return {
        "h": header,
        **d,
        "headlines": headlines(main_rows, alpha, correction),
        "rows": main_rows,
        "network_rows": network_rows,
        "qlog_rows": group_rows(today, "qlog"),
        "multi_arm": today["treatment_arm"].nunique() > 1 if len(today) else False,
        "power": power_lines(today),
        "pcols": power_columns(today),
        "percentiles": percentile_table(today),
        "alpha": alpha,
        "confidence": f"{(1 - alpha) * 100:g}%",
        "segments": plots.segments(today, d["all_cards"]),
        "drilldown": [(c, segment_rows(today, c.arms[0].metric, c.arms[0].quantile_p)) for c in d["all_cards"]],
        "forest": plots.forest(today, exclude=d["declared"]),
        "exploratory_count": _exploratory_count(today, d["declared"]),
        "curve": plots.percentile_curve(today),
        "cumulative": plots.cumulative(data.results, today, first=first),
        "buckets": plots.buckets(today, first=first),
        "daily": plots.daily_values(data.daily_values, today, first=first),
        "multipath": multipath_section(today, arm_order),
        "as_of_dates": sorted({str(d) for d in data.results["as_of_date"]}),
        "missing": data.missing,
        "small_units": plots.SMALL_SEGMENT_UNITS,
    }


def _exploratory_count(today, declared: set) -> int:
    overall = today[(today["segment_type"] == "overall") & (today["metric"] != plots.CURVE_METRIC)]
    keys = {(m, None if q != q else round(float(q), 6)) for m, q in zip(overall["metric"], overall["quantile_p"], strict=True)}
    return len(keys - declared)


def render(data: ReportData) -> RenderedReport:
    """The report of ``data.experiment`` as of ``data.day``; metrics shown as ``data.metrics``
    (or the configured registry) says."""
    with using(data.metrics or load_metrics()):
        ctx = context(data)
        html = _ENV.get_template("report.html.j2").render(**ctx)
        markdown = _MD_ENV.get_template("report.md.j2").render(**ctx)
    n_sig = sum(r.significant for r in ctx["rows"])
    return RenderedReport(html, markdown, ctx["health"].ok and not ctx["h"].srm_failed, n_sig)
