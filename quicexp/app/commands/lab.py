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
    """Run the lab's transfers and write one upload day of real-stack telemetry.

    Needs the stacks of the config's arms: for ngtcp2 arms, ngtcp2's example
    client and server (Debian packages ngtcp2-client and ngtcp2-server:
    scripts/test-deps.d/ngtcp2.sh); aioquic is in the pipeline environment.

    To analyse the day, the config's experiment_id must be in the experiment
    registry (registry/experiments.yml) with the config's arms, running on the
    day; then run `quicexp run-day --date D`. The last line says what to run.

    A run during which the host itself dropped UDP datagrams is invalid (left
    out of the results) and runs again, up to the config's `attempts`.
    """
    import lab
    from lab.runner import next_step
    from quicexp.config import load_settings, parse_day

    settings = load_settings()
    the_day = parse_day(day) if day else None
    lab_config = lab.load_config(config)
    quiet_progress = {"progress": None} if quiet else {}  # default: "lab: …" lines on stderr
    summary = lab.run(settings, lab_config, the_day, **quiet_progress)
    typer.echo(
        f"lab {summary.day} {summary.run_id}: {summary.clients} clients, {len(summary.connections)} runs, "
        f"{summary.failed} failed, {summary.invalid_runs} invalid (host drops), {summary.seconds:.1f}s "
        f"-> {settings.landing_root}"
    )
    typer.echo(next_step(settings, lab_config, summary.day))
    lost = summary.clients_without_clean_run
    if lost:
        raise PartialFailure(
            f"{len(lost)} of {summary.clients} lab clients have no clean run ({summary.failed} runs failed, "
            f"{summary.invalid_runs} were invalid: the host dropped UDP datagrams); their connections are "
            "left out of the results (docs/lab.md, Host drops)"
        )
