"""Superset on the lake: setup, web server, dashboards bundle import/export (docs/serving.md)."""
