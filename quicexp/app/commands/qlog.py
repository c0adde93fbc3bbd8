"""``quicexp ingest-qlog --date D``: qlog files of one upload day → bronze.qlog_connections."""

from __future__ import annotations

from typing import Annotated

import typer


def qlog_command(
    day: Annotated[str, typer.Option("--date", "-d", help="Upload day, YYYY-MM-DD.")],
    force: Annotated[
        bool, typer.Option("--force", help="Process a day after today (UTC), which is refused otherwise.")
    ] = False,
) -> None:
    """Load the day's qlog files (landing/upload_date=D/qlog/) into bronze.qlog_connections."""
    import jobs.qlog.job
    from quicexp.app.cli import day_to_process
    from quicexp.config import load_settings
    from quicexp.spark import build_spark

    settings, d = load_settings(), day_to_process(day, force)
    traces, sidecars = jobs.qlog.job.qlog_files(settings, d)  # landing errors before a JVM starts
    size = sum(path.stat().st_size for path in [*traces, *sidecars])  # sets the JVM's JIT
    summary = jobs.qlog.job.run(build_spark(settings, "quicexp-qlog", input_bytes=size), settings, d)
    c = summary.counts
    typer.echo(
        f"qlog {d}: {summary.files} files, {c['rows_read']} rows read (traces and sidecar lines), loaded {c['rows_loaded']}, "
        f"quarantined {c['rows_quarantined']}, duplicate {c['rows_duplicate']}"
    )
