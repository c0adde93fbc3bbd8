"""``quicexp stats``: analyse a sufficient-statistics file, write the results file.

The command function is plain and typer-annotated so that the project CLI can register it
(``app.command("stats")(stats_command)``). Errors are :mod:`quicexp.errors` kinds (one line, exit code by kind);
bad input rows are one line each on stderr and the other rows are still analysed; when no row
can be analysed the command writes nothing and ends with a data-quality error. Warnings of the
numerical libraries go to the log file (``<home>/logs/quicexp.log``), never to the console.
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from pydantic import ValidationError

from quicexp.errors import ConfigError, DataQualityError, InputDataError, QuicexpError

if TYPE_CHECKING:
    from stats.settings import AnalysisSettings


#: numerical warnings are logged here; the console shows this logger's records only from ERROR
#: on (quicexp.app.cli, "summarised"), the log file all of them
_LOG = logging.getLogger("stats.engine")


def _log_to_file() -> None:
    """Log records also to ``<home>/logs/quicexp.log`` (when the settings can be read)."""
    from quicexp.app.cli import log_to_file
    from quicexp.config import load_settings

    try:
        log_to_file(load_settings())
    except (ConfigError, OSError):  # the stats command works without a writable home
        pass


def _fail(message: str, kind: type[QuicexpError] = ConfigError) -> QuicexpError:
    """The one-line error the entry point prints (its kind sets the exit code)."""
    return kind(message)


def _settings(config: Path | None, overrides: dict[str, object]) -> AnalysisSettings:
    from stats.settings import AnalysisSettings

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
        str | None, typer.Option(help="Relative interval: fieller (default) or delta.")
    ] = None,
    sequential_tuning_n: Annotated[
        str | None, typer.Option(help="Mixing parameter N* of the sequential interval.")
    ] = None,
    decisions: Annotated[
        Path | None,
        typer.Option(
            "--decisions",
            help="Also write the verdicts of the experiments that declare their metrics in the "
            "experiment registry (QUICEXP_REGISTRY_FILE) to this file (.parquet or .csv); the "
            "registry's plans and splits then size the analysis, as in the daily run.",
        ),
    ] = None,
) -> None:
    """Compute deltas, intervals, SRM, corrections and sequential intervals for a table.

    INPUT and OUTPUT are required; they are declared optional only so that a missing one is
    reported in one line like every other error. Numbers are parsed (and validated) by the
    settings model for the same reason.
    """
    if input is None or output is None:
        raise _fail("missing argument " + ("INPUT" if input is None else "OUTPUT"))
    if not input.is_file():  # said before the settings, whose models import pandas (seconds)
        raise _fail(f"input file not found: {input}", InputDataError)
    if config is not None and not config.is_file():
        raise _fail(f"config file not found: {config}")
    registry_overrides = _registry_overrides() if decisions is not None else {}
    try:
        settings = _settings(
            config,
            {**registry_overrides, "alpha": alpha, "correction": correction,
             "relative_ci": relative_ci, "sequential_tuning_n": sequential_tuning_n},
        )  # fmt: skip
    except ValidationError as exc:
        raise _fail(_validation_message(exc)) from None
    except (ValueError, OSError, ImportError) as exc:
        raise _fail(f"cannot read config {config}: {str(exc).splitlines()[0]}") from None
    _log_to_file()
    result, verdicts = _analyse(input, output, settings, decisions)
    typer.echo(
        f"wrote {len(result.results)} comparisons to {output}"
        f" ({len(result.issues)} input rows skipped)"
    )
    if decisions is not None:
        typer.echo(f"wrote {len(verdicts)} verdicts to {decisions}")


def _analyse(input: Path, output: Path, settings: AnalysisSettings, decisions: Path | None):
    """Read, analyse, write the results (and the verdicts); errors as one-line kinds."""
    from stats.inputs import SchemaError
    from stats.io import TableFormatError, read_table, write_table

    verdicts = None
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            table = read_table(input)
            for path in (output, decisions):
                if path is not None and path.suffix.lower() not in (".parquet", ".pq", ".csv"):
                    raise TableFormatError(
                        f"unsupported output type '{path.suffix}' (use .parquet or .csv)"
                    )
            from stats.engine import analyze_table  # scipy and statsmodels: once the input is read

            result = analyze_table(table, settings)
            for issue in result.issues:
                typer.echo(f"skipped {issue}", err=True)
            if result.results.empty:
                rows = f"{len(table)} rows, all skipped" if len(table) else "no rows"
                raise DataQualityError(
                    f"no comparison could be analysed ({input}: {rows}); {output} not written"
                )
            write_table(result.results, output)
            if decisions is not None:
                verdicts = _decide(result.results, settings.alpha)
                write_table(_flat(verdicts, decisions), decisions)
    except (FileNotFoundError, TableFormatError, SchemaError) as exc:
        raise _fail(str(exc), InputDataError) from None
    except OSError as exc:
        raise _fail(f"cannot write {exc.filename or output}: {exc.strerror or exc}",
                    QuicexpError) from None  # fmt: skip
    finally:
        for w in caught:  # the log file only: the console has the one-line messages
            _LOG.warning("%s:%s: %s: %s", w.filename, w.lineno, w.category.__name__, w.message)
    return result, verdicts


def _registry_overrides() -> dict[str, object]:
    """The experiment registry's plans and splits, as the daily run gives them to the engine."""
    from jobs.experiment_results import analysis_settings
    from quicexp.config import load_settings
    from quicexp.registry import load_registry

    engine = analysis_settings(load_registry(load_settings().registry_file))
    return {"plans": engine.plans, "expected_split": engine.expected_split}


def _decide(results, alpha: float):
    """Verdicts of every look in ``results`` for the registry's experiments with declared
    metrics (stats.decision, as the daily results step computes them)."""
    from quicexp.config import load_settings
    from quicexp.metrics import load_metrics
    from quicexp.registry import load_registry
    from stats.decision import decide
    from stats.settings import DecisionSettings

    settings = load_settings()
    registry = load_registry(settings.registry_file)
    plans = registry.decision_plans(load_metrics(settings.metrics_file))
    if not plans:
        raise ConfigError(f"no experiment of {settings.registry_file} declares its metrics")
    return decide(results, DecisionSettings(alpha=alpha, experiments=plans)).verdicts


def _flat(verdicts, path: Path):
    """A CSV cell holds text: the reasons joined by ';' there (a list in Parquet)."""
    if path.suffix.lower() == ".csv":
        return verdicts.assign(reasons=verdicts["reasons"].map(";".join))
    return verdicts
