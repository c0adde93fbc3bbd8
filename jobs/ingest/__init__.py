"""Ingestion: landing zone (JSON lines, Parquet) → bronze Delta tables. See ``job.run``."""

from jobs.ingest.job import JOB, IngestSummary, run

__all__ = ["JOB", "IngestSummary", "run"]
