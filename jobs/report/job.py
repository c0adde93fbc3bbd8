"""The report job: lake -> ReportData -> HTML + Markdown, written to the reports folder and the lake.

Files: ``<reports_dir>/<experiment>/<day>.html`` and ``.md``. Lake: one row per experiment and
as-of date in ``gold.experiment_reports`` (replaced atomically on re-runs), so Superset and
notebooks can list and show reports next to the results they summarise; and, the first time an
experiment's as-of date is reported, the numbers that report published in
``gold.experiment_report_published`` (never rewritten: every later report compares the lake's
current numbers with them and marks each revised as-of date, reports.revision).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from jobs.delta_io import ensure_schema, ensure_table, qualified, replace_where
from jobs.report.load import PUBLISHED_TABLE, load_experiment, load_report_data
from quicexp.config import Settings
from quicexp.metrics import load_metrics
from quicexp.registry import Registry
from reports.compose import RenderedReport, render
from reports.data import ReportData
from reports.revision import PUBLISHED_TYPES, declared_roles, publication

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("quicexp.report")

REPORTS_DDL = (
    "experiment_id string, as_of_date date, title string, is_trustworthy boolean, "
    "significant_rows int, markdown string, html string, html_path string"
)


@dataclass(frozen=True)
class ReportPaths:
    html: Path
    markdown: Path


def write_files(
    settings: Settings, experiment_id: str, day: date, report: RenderedReport
) -> ReportPaths:
    out_dir = settings.reports_dir / experiment_id
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = ReportPaths(out_dir / f"{day.isoformat()}.html", out_dir / f"{day.isoformat()}.md")
    for path, text in ((paths.html, report.html), (paths.markdown, report.markdown)):
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)  # readers never see a half-written report
    return paths


def write_lake(spark: SparkSession, settings: Settings, experiment_id: str, title: str, day: date,
               report: RenderedReport, paths: ReportPaths) -> None:  # fmt: skip
    from pyspark.sql import functions as F
    from pyspark.sql.types import _parse_datatype_string

    ensure_schema(spark, settings.gold_schema)
    table = qualified(settings.gold_schema, "experiment_reports")
    struct = _parse_datatype_string(REPORTS_DDL)
    ensure_table(spark, table, struct, ["as_of_date"])
    row = (experiment_id, day, title, report.trustworthy, report.significant, report.markdown, report.html,
           str(paths.html))  # fmt: skip
    frame = spark.createDataFrame([row], struct)
    replace_where(
        frame,
        table,
        (F.col("experiment_id") == experiment_id) & (F.col("as_of_date") == F.lit(day)),
    )


def record_publication(spark: SparkSession, settings: Settings, data: ReportData, experiment_id: str) -> int:
    """Record the numbers this report publishes, unless a report of this experiment and as-of
    date was published before (the first publication is what readers saw and acted on: it stays
    the reference a revision is measured from). Returns the rows written (0 on a re-run)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import _parse_datatype_string

    table = qualified(settings.gold_schema, PUBLISHED_TABLE)
    if data.published is not None and len(data.on_day(data.published)):
        return 0
    rows = publication(data.today, data.on_day(data.decisions), declared_roles(data.on_day(data.decision_tests)))
    if rows.empty:
        return 0
    struct = _parse_datatype_string(", ".join(f"{c} {t}" for c, t in PUBLISHED_TYPES.items()))
    ensure_table(spark, table, struct, ["as_of_date"])
    now = datetime.now(UTC)
    columns = [c for c in PUBLISHED_TYPES if c != "published_at"]
    records = [(*(None if isinstance(v, float) and v != v else v for v in r), now)
               for r in rows[columns].itertuples(index=False)]  # fmt: skip
    this = (F.col("experiment_id") == experiment_id) & (F.col("as_of_date") == F.lit(data.day))
    replace_where(spark.createDataFrame(records, struct), table, this)
    return len(records)


def run(spark: SparkSession, settings: Settings, day: date, experiment_id: str,
        registry: Registry | None = None) -> ReportPaths:  # fmt: skip
    """Write the report of ``experiment_id`` as of ``day``; returns the file paths.

    The experiment's arms and split are those the pipeline published (bronze.experiment_arms),
    or ``registry``'s when given; labels, sections and units are the metric registry's
    (``settings.metrics_file``). Raises ConfigError (one line) when there are no results or the
    metric registry is missing or invalid.
    """
    started = time.monotonic()
    metrics = load_metrics(settings.metrics_file)  # a bad registry stops here, before any Spark
    experiment = load_experiment(spark, settings, experiment_id, registry)
    data = replace(load_report_data(spark, settings, day, experiment), metrics=metrics)
    loaded = time.monotonic()
    log.info("report %s %s: %d result rows over %d as-of dates loaded in %.1fs%s", experiment_id, day,
             len(data.results), data.results["as_of_date"].nunique(), loaded - started,
             f" (not available: {', '.join(data.missing)})" if data.missing else "")  # fmt: skip
    report = render(data)
    rendered = time.monotonic()
    paths = write_files(settings, experiment_id, day, report)
    write_lake(spark, settings, experiment_id, experiment.title, day, report, paths)
    record_publication(spark, settings, data, experiment_id)
    log.info("report %s %s: rendered in %.1fs (%d KiB, %d significant rows%s), written in %.1fs: %s",
             experiment_id, day, rendered - loaded, len(report.html) // 1024, report.significant,
             "" if report.trustworthy else ", SRM FAILED", time.monotonic() - rendered, paths.html)  # fmt: skip
    return paths
