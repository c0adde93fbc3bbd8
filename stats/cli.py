"""``quicexp stats``: analyse a sufficient-statistics file, write the results file.

The command function is plain and typer-annotated so that the project CLI can register it
(``app.command("stats")(stats_command)``). Errors are one line on stderr and a non-zero exit;
bad input rows are one line each on stderr and the other rows are still analysed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError

from stats.engine import analyze_table
from stats.io import TableFormatError, read_table, write_table
from stats.settings import AnalysisSettings
from stats.validation import SchemaError

EXIT_USAGE = 2


def _fail(message: str, code: int = EXIT_USAGE) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def _settings(config: Path | None, overrides: dict[str, object]) -> AnalysisSettings:
    base = AnalysisSettings.from_file(config) if config is not None else AnalysisSettings()
    data = base.model_dump()
    data.update({k: v for k, v in overrides.items() if v is not None})
    return AnalysisSettings.model_validate(data)


def _validation_message(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "settings"
    return f"invalid setting {where}: {err['msg']}"


def stats_command(
    input: Annotated[
        Path | None,
        typer.Argument(help="Sufficient statistics (.parquet or .csv).", show_default=False),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Argument(help="Results file to write (.parquet or .csv).", show_default=False),
    ] = None,
    config: Annotated[
        Path | None, typer.Option("--config", "-c", help="Settings file (.json, .toml, .yaml).")
    ] = None,
    alpha: Annotated[str | None, typer.Option(help="Two-sided level (default 0.05).")] = None,
    correction: Annotated[
        str | None, typer.Option(help="Multiple-comparison method: bh, holm, bonferroni, none.")
    ] = None,
    relative_ci: Annotated[
        str | None, typer.Option(help="Relative interval: delta or fieller.")
    ] = None,
    sequential_tuning_n: Annotated[
        str | None, typer.Option(help="Mixing parameter N* of the sequential interval.")
    ] = None,
) -> None:
    """Compute deltas, intervals, SRM, corrections and sequential intervals for a table.

    INPUT and OUTPUT are required; they are declared optional only so that a missing one is
    reported in one line like every other error. Numbers are parsed (and validated) by the
    settings model for the same reason.
    """
    if input is None or output is None:
        raise _fail("missing argument " + ("INPUT" if input is None else "OUTPUT"))
    if config is not None and not config.is_file():
        raise _fail(f"config file not found: {config}")
    try:
        settings = _settings(
            config,
            {"alpha": alpha, "correction": correction, "relative_ci": relative_ci,
             "sequential_tuning_n": sequential_tuning_n},
        )  # fmt: skip
    except ValidationError as exc:
        raise _fail(_validation_message(exc)) from None
    except (ValueError, OSError, ImportError) as exc:
        raise _fail(f"cannot read config {config}: {str(exc).splitlines()[0]}") from None
    try:
        table = read_table(input)
        if output.suffix.lower() not in (".parquet", ".pq", ".csv"):
            raise TableFormatError(
                f"unsupported output type '{output.suffix}' (use .parquet or .csv)"
            )
        result = analyze_table(table, settings)
        for issue in result.issues:
            typer.echo(f"skipped {issue}", err=True)
        write_table(result.results, output)
    except (FileNotFoundError, TableFormatError, SchemaError) as exc:
        raise _fail(str(exc)) from None
    except OSError as exc:
        raise _fail(f"cannot write {output}: {exc.strerror or exc}", 1) from None
    typer.echo(
        f"wrote {len(result.results)} comparisons to {output}"
        f" ({len(result.issues)} input rows skipped)"
    )
