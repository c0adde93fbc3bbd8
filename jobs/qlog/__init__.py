"""qlog from real QUIC stacks → connection-level bronze stats. See ``jobs.qlog.job``."""

from jobs.qlog.job import QlogSummary, qlog_files, run

__all__ = ["QlogSummary", "qlog_files", "run"]
