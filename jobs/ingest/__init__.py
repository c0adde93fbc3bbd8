"""Ingestion: landing zone (JSON lines, Parquet) → bronze Delta tables. See ``job.run``."""

from jobs.ingest.job import IngestSummary, run

__all__ = ["IngestSummary", "run"]
