"""The daily experiment report: gold tables → a self-contained HTML file (and Markdown summary).

``render`` is pure (results rows in, HTML out); ``run`` reads the day's results from the
lake and writes ``<reports_dir>/<experiment>/<day>.html``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from jinja2 import Environment, PackageLoader, select_autoescape

from jobs.delta_io import qualified
from quicexp.config import ConfigError, Settings
from quicexp.registry import Experiment, load_registry

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import SparkSession

_ENV = Environment(loader=PackageLoader("jobs", "templates"), autoescape=select_autoescape())


@dataclass(frozen=True)
class ReportPaths:
    html: Path
    markdown: Path


def _fmt(value: float, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.{digits}g}" if abs(value) < 1000 else f"{value:,.0f}"


def _pct(value: float) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value * 100:+.2f}%"


def scorecard_rows(results: pd.DataFrame) -> list[dict]:
    """One display row per metric × segment, in the seeds' shape: delta (rel) [CI]."""
    rows = []
    ordered = results.sort_values(["metric", "segment_type", "segment_value"])
    for r in ordered.itertuples(index=False):
        rows.append(
            {
                "metric": r.metric,
                "segment": "all" if r.segment_type == "overall" else f"{r.segment_value}",
                "n": f"{int(r.n_control):,} / {int(r.n_treatment):,}",
                "control": _fmt(r.value_control),
                "treatment": _fmt(r.value_treatment),
                "delta": f"{_fmt(r.delta_abs)} ({_pct(r.delta_rel)})",
                "ci": f"[{_fmt(r.ci_abs_lower)}, {_fmt(r.ci_abs_upper)}]",
                "p": _fmt(r.p_value_adjusted, 2),
                "significant": bool(r.is_significant),
                "method": r.method,
            }
        )
    return rows


def render(experiment: Experiment, day: date, results: pd.DataFrame) -> tuple[str, str]:
    """HTML and Markdown for one experiment and day."""
    rows = scorecard_rows(results)
    trustworthy = bool(results["is_trustworthy"].all()) if len(results) else True
    srm_p = float(results["srm_p_value"].min()) if len(results) else float("nan")
    context = {"experiment": experiment, "day": day, "rows": rows, "trustworthy": trustworthy, "srm_p": _fmt(srm_p, 2)}
    return _ENV.get_template("report.html.j2").render(**context), _ENV.get_template("report.md.j2").render(**context)


def run(spark: SparkSession, settings: Settings, day: date, experiment_id: str) -> ReportPaths:
    from pyspark.sql import functions as F

    experiment = load_registry().get(experiment_id)
    table = qualified(settings.gold_schema, "experiment_results")
    if not spark.catalog.tableExists(table):
        raise ConfigError(f"{table} does not exist yet: run the pipeline for {day} first")
    results = (
        spark.table(table)
        .where((F.col("experiment_id") == experiment_id) & (F.col("as_of_date") == F.lit(day)))
        .toPandas()
    )
    if results.empty:
        raise ConfigError(f"no results for experiment {experiment_id} on {day}")
    html, markdown = render(experiment, day, results)
    out_dir = settings.reports_dir / experiment_id
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = ReportPaths(out_dir / f"{day.isoformat()}.html", out_dir / f"{day.isoformat()}.md")
    paths.html.write_text(html)
    paths.markdown.write_text(markdown)
    return paths
