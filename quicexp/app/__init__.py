"""The application layer: the one ``quicexp`` command line, the daily-run composition, the
demo and the local services (Thrift SQL endpoint, Superset).

It sits on top of everything: it may import the foundation (``quicexp.config``, ``.spark``,
``.catalog``, ``.registry``, ``.telemetry`` …), the jobs, the simulator and the statistics
engine; none of those imports it (import-linter contracts in pyproject.toml, run by ``make lint``).
"""
