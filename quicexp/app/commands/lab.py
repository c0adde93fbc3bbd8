"""``quicexp lab --config FILE [--date D]``: a real-stack A/B experiment on this machine.

Runs HTTP/3 transfers between real QUIC client and server processes (ngtcp2, aioquic) through
the loopback impairment relay, for every arm and network condition of the config, and writes
the day's landing files (qlog traces, sidecar, JSON events, relay counters): see docs/lab.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from quicexp.errors import PartialFailure


def lab_command(
    config: Annotated[Path, typer.Option("--config", "-c", help="Lab config (YAML): arms and network grid.")],
    day: Annotated[
        str | None, typer.Option("--date", "-d", help="Upload day, YYYY-MM-DD (default: today, UTC).")
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress lines.")] = False,
) -> None:
    """Run the lab's transfers and write one upload day of real-stack telemetry."""
    import lab
    from quicexp.config import load_settings, parse_day

    settings = load_settings()
    the_day = parse_day(day) if day else None
    quiet_progress = {"progress": None} if quiet else {}  # default: "lab: …" lines on stderr
    summary = lab.run(settings, lab.load_config(config), the_day, **quiet_progress)
    typer.echo(
        f"lab {summary.day} {summary.run_id}: {len(summary.connections)} connections, "
        f"{summary.failed} failed, {summary.seconds:.1f}s -> {settings.landing_root}"
    )
    if summary.failed:
        raise PartialFailure(f"{summary.failed} of {len(summary.connections)} lab connections failed")
