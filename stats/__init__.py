"""Pure statistics over sufficient statistics (numpy/scipy/statsmodels, no Spark).

Entry points: :func:`stats.engine.analyze` (library), :func:`quicexp.app.commands.stats.stats_command`
(``quicexp stats``), :class:`stats.settings.AnalysisSettings`. Column contract, methods and
validation numbers: docs/stats.md. Importing ``stats`` itself imports nothing heavy.
"""
