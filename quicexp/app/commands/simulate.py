"""``quicexp simulate``: run a fleet-simulator scenario into a landing zone.

The function :func:`simulate` is typer-annotated; the project CLI registers it as a command. Bad
arguments end with a one-line message on stderr and exit code 2 (quicexp.errors), never a traceback.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Annotated

import typer

from quicexp.errors import ConfigError, InputDataError
from simulation.scenario import ScenarioError, list_scenarios


def _fail(message: str) -> ConfigError:
    return ConfigError(message)


def simulate(
    scenario: Annotated[str, typer.Argument(help=f"Bundled scenario name ({', '.join(list_scenarios())}) or a YAML path.")],
    days: Annotated[int, typer.Option(help="Days to simulate (default: the scenario's).")] = 0,
    clients: Annotated[int, typer.Option(help="Clients in the population (default: the scenario's).")] = 0,
    out: Annotated[Path, typer.Option(help="Landing-zone directory to write.")] = Path("var/landing"),
    seed: Annotated[int, typer.Option(help="Random seed (default: the scenario's).")] = -1,
    format: Annotated[str, typer.Option("--format", help="jsonl (gzip JSON lines) or parquet.")] = "jsonl",
    start_date: Annotated[str | None, typer.Option(help="First simulated day, YYYY-MM-DD.")] = None,
    workers: Annotated[int, typer.Option(help="Worker processes (default: CPU count).")] = 0,
) -> None:
    """Simulate a fleet running the scenario's experiments and write telemetry to OUT."""
    from simulation.runner import run_scenario
    from simulation.writer import FORMATS

    if format not in FORMATS:
        raise _fail(f"--format must be one of {', '.join(FORMATS)}, got {format!r}")
    if days < 0 or clients < 0 or workers < 0:
        raise _fail("--days, --clients and --workers must not be negative")
    if start_date is not None:
        try:
            dt.date.fromisoformat(start_date)
        except ValueError:
            raise _fail(f"--start-date must be YYYY-MM-DD, got {start_date!r}") from None
    try:
        manifest = run_scenario(
            scenario,
            out,
            days=days or None,
            clients=clients or None,
            seed=None if seed < 0 else seed,
            fmt=format,
            start_date=start_date,
            workers=workers or None,
            progress=True,
        )
    except ScenarioError as err:
        raise _fail(str(err)) from None
    except OSError as err:
        raise InputDataError(f"cannot write {out}: {err.strerror or err}") from None
    typer.echo(
        f"{manifest['scenario']}: {manifest['events_total']:,} events over {manifest['days']} day(s) "
        f"for {manifest['clients']:,} clients in {manifest['seconds']:.1f}s -> {out}/_manifest.json"
    )
