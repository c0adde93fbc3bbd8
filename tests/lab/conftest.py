"""Fixtures of the lab tests."""

from tests.jobs.conftest import ingest_spark  # noqa: F401  (the small-data Delta session)
