"""The experiment report's rendering: results -> HTML + Markdown, pure (no Spark, no lake).

One module per concern:

- :mod:`reports.data`: :class:`ReportData`, the frames a report is made from (filled from the lake
  by the job ``jobs.report``, or built by hand in tests and notebooks);
- :mod:`reports.metrics` / :mod:`reports.fmt`: labels, units and numbers in the seeds' shape
  ("p95 request latency, Windows: +98 ms (+3.0%) [+61, +135]"); the display facts come from the
  metric registry (:mod:`quicexp.metrics`);
- :mod:`reports.decision`, :mod:`reports.health`, :mod:`reports.revision`: the first screen —
  verdicts and cards (gold.experiment_decisions and its tests), the health banner, and what
  changed since a report was published; :mod:`reports.bars`: the cards' inline SVG intervals;
- :mod:`reports.header`, :mod:`reports.scorecard`, :mod:`reports.multipath`: the sections, pure
  functions of the results;
- :mod:`reports.plots`: matplotlib charts embedded as base64 PNG;
- :mod:`reports.compose`: the Jinja templates (reports/templates/) -> HTML + Markdown.
"""

from reports.compose import RenderedReport, render
from reports.data import IngestQuality, ReportData

__all__ = ["IngestQuality", "RenderedReport", "ReportData", "render"]
