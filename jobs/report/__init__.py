"""The daily report job: the lake -> :class:`reports.ReportData` -> files and a lake table.

Only the loading and writing live here (the job's Spark side):

- :mod:`jobs.report.load`: the lake -> :class:`~reports.data.ReportData` (the only Spark);
- :mod:`jobs.report.job`: ``run(spark, settings, day, experiment_id, registry)`` writes the files
  and the lake table ``gold.experiment_reports``.

The rendering (sections, numbers, plots, templates) is the pure package :mod:`reports`.
"""

from jobs.report.job import ReportPaths, run
from reports import IngestQuality, RenderedReport, ReportData, render

__all__ = ["IngestQuality", "RenderedReport", "ReportData", "ReportPaths", "render", "run"]
