"""What one report is made of: plain pandas frames and small records, no Spark.

:func:`jobs.report.load.load_report_data` (the job) fills a :class:`ReportData` from the lake; tests build
one directly from the stats engine's output. Every source but the results is optional: a section
whose source is missing says "not available" (``ReportData.missing`` names why).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING

from quicexp.metrics import MetricRegistry
from quicexp.registry import Experiment

if TYPE_CHECKING:
    import pandas as pd

#: segment types shown in the main scorecard; every other type is a network-condition segment
SCORECARD_SEGMENTS = ("overall", "platform")
#: segment types of the "effect by network-condition bucket" plot, in panel order
BUCKET_SEGMENTS = ("rtt_bucket", "loss_bucket", "bandwidth_bucket")


@dataclass(frozen=True)
class IngestQuality:
    """Totals of bronze.ingest_audit over the upload days the experiment has run."""

    first_day: date
    last_day: date
    rows_read: int
    rows_quarantined: int
    rows_duplicate: int
    rows_late: int

    def rate(self, count: int) -> float:
        return count / self.rows_read if self.rows_read else float("nan")


@dataclass(frozen=True)
class ReportData:
    """Inputs of one experiment's report for one day.

    Attributes:
        experiment: the registry entry (title, arms, split, start date).
        day: the logical day (results as of this date). The arms' values in the scorecard are
            the stats engine's estimates (value_control / value_treatment), computed from the
            same sufficient statistics as gold.metric_values_to_date, so that mart is not read.
        results: gold.experiment_results rows of this experiment with as_of_date <= day.
        daily_values: gold.metric_values_daily rows (event_date <= day), or None.
        quality: ingest-audit totals, or None.
        missing: source name -> why it is not available (shown in the report's footer).
        metrics: the metric registry the report names and orders metrics by; None: the
            configured one (``Settings.metrics_file``).
        decisions: gold.experiment_decisions rows (as_of_date <= day), or None (the experiment
            declares no metrics, or the table does not exist yet).
        decision_tests: gold.experiment_decision_tests rows (as_of_date <= day), or None.
        health: gold.experiment_health rows of the day, or None (the table does not exist yet:
            the sample-ratio check then comes from the results).
        published: gold.experiment_report_published rows (as_of_date <= day): what earlier
            reports published, compared with the lake's current numbers (reports.revision).
    """

    experiment: Experiment
    day: date
    results: pd.DataFrame
    daily_values: pd.DataFrame | None = None
    quality: IngestQuality | None = None
    missing: dict[str, str] = field(default_factory=dict)
    metrics: MetricRegistry | None = None
    decisions: pd.DataFrame | None = None
    decision_tests: pd.DataFrame | None = None
    health: pd.DataFrame | None = None
    published: pd.DataFrame | None = None

    @property
    def today(self) -> pd.DataFrame:
        """Results as of the report's day."""
        return self.results[as_dates(self.results["as_of_date"]) == self.day]

    def on_day(self, frame: pd.DataFrame | None) -> pd.DataFrame | None:
        """``frame``'s rows of the report's day (None stays None)."""
        if frame is None or frame.empty:
            return frame
        return frame[as_dates(frame["as_of_date"]) == self.day]


def as_dates(column: pd.Series) -> pd.Series:
    """A date column from Spark or pandas (date objects, Timestamps or strings) as ``date``s."""
    import pandas as pd

    return pd.to_datetime(column).dt.date
