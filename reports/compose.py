"""ReportData -> self-contained HTML and a Markdown summary (pure; no Spark, no I/O).

The HTML embeds its charts as base64 PNG and its CSS inline, so the file can be mailed or opened
from disk. Sections whose source is missing say "not available" instead of failing.
"""

from __future__ import annotations

from dataclasses import dataclass

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from quicexp.metrics import load_metrics
from reports import plots
from reports.data import ReportData
from reports.fmt import power_columns
from reports.header import build_header
from reports.metrics import using
from reports.multipath import multipath_section
from reports.scorecard import group_rows, headlines, percentile_table, power_lines, scorecard

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


def context(data: ReportData) -> dict:
    """Everything the templates show, as plain strings, lists and data URIs."""
    today = data.today
    header = build_header(data)
    main_rows, network_rows = scorecard(today)
    alpha = float(_setting(today, "alpha", 0.05))
    correction = str(_setting(today, "correction_method", "bh"))
    arm_order = [a.name for a in sorted(data.experiment.arms, key=lambda a: not a.is_control)]
    return {
        "h": header,
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
        "forest": plots.forest(today),
        "curve": plots.percentile_curve(today),
        "cumulative": plots.cumulative(data.results, today),
        "buckets": plots.buckets(today),
        "daily": plots.daily_values(data.daily_values, today),
        "multipath": multipath_section(today, arm_order),
        "as_of_dates": sorted({str(d) for d in data.results["as_of_date"]}),
        "missing": data.missing,
    }


def render(data: ReportData) -> RenderedReport:
    """The report of ``data.experiment`` as of ``data.day``; metrics shown as ``data.metrics``
    (or the configured registry) says."""
    with using(data.metrics or load_metrics()):
        ctx = context(data)
        html = _ENV.get_template("report.html.j2").render(**ctx)
        markdown = _MD_ENV.get_template("report.md.j2").render(**ctx)
    n_sig = sum(r.significant for r in ctx["rows"])
    return RenderedReport(html, markdown, not ctx["h"].srm_failed, n_sig)
