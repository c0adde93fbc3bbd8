"""A DuckDB reference of the pipeline (ingest + dbt gold), for the speed yardstick of issue #15.

Never part of the pipeline: it exists so that ``make bench-pipeline`` compares the pipeline's
time with a plain engine doing the same work on the same landing files (bench/reference/*.sql).
"""
