"""The daily experiment report: what a transport team reads every morning.

One package, one module per concern:

- :mod:`jobs.report.load`: the lake -> :class:`~jobs.report.data.ReportData` (the only Spark);
- :mod:`jobs.report.metrics` / :mod:`jobs.report.fmt`: labels, units and numbers in the seeds'
  shape ("p95 request latency, Windows: +98 ms (+3.0%) [+61, +135]");
- :mod:`jobs.report.header`, :mod:`jobs.report.scorecard`, :mod:`jobs.report.multipath`: the
  sections, pure functions of the results;
- :mod:`jobs.report.plots`: matplotlib charts embedded as base64 PNG;
- :mod:`jobs.report.compose`: the Jinja templates (jobs/templates/) -> HTML + Markdown;
- :mod:`jobs.report.job`: ``run(spark, settings, day, experiment_id)`` writes the files and the
  lake table ``gold.experiment_reports``.
"""

from jobs.report.compose import RenderedReport, render
from jobs.report.data import IngestQuality, ReportData
from jobs.report.job import ReportPaths, run

__all__ = ["IngestQuality", "RenderedReport", "ReportData", "ReportPaths", "render", "run"]
