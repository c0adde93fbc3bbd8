"""Pure statistics over sufficient statistics (numpy/scipy/statsmodels, no Spark).

Entry points: :func:`stats.engine.analyze` (library), :func:`stats.cli.stats_command`
(``quicexp stats``), :class:`stats.settings.AnalysisSettings`. Column contract, methods and
validation numbers: docs/stats.md. Importing ``stats`` itself imports nothing heavy.
"""
