"""Spark jobs: each module exposes `run(spark, config, day)`; none imports Airflow."""
