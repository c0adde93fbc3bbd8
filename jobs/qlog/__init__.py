"""qlog from real QUIC stacks → connection-level bronze stats: ``jobs.qlog.job.run``.

Deliberately empty: Spark's Python workers import ``jobs.qlog.parse`` (stdlib only), and
importing this package must not pull in the job's Spark-side dependencies.
"""
