"""Helpers of the quicexp DAGs: run-time code the DAG files point at.

Runs in the Airflow environment, which never imports Spark or the pipeline packages: the
pipeline is reached through its CLI (``.venvs/pipeline/bin/quicexp``) and ``scripts/airflow.sh``.
Only the standard library and Airflow are imported here.
"""
