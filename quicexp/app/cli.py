"""The ``quicexp`` command line: one entry point, one subcommand per pipeline step.

Every step that needs Spark builds the session once (Delta + shared catalog) and calls a
job's ``run(spark, settings, day)``. Errors are one line on stderr with the exit code of their
kind (:mod:`quicexp.errors`), never a traceback; logs go to ``<home>/logs``.
"""

from __future__ import annotations

import logging
import sys
import time
from datetime import UTC, date, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Annotated

import typer

from quicexp.config import ConfigError, Settings, load_settings, parse_day
from quicexp.errors import (
    DataQualityError,
    InputDataError,
    PartialFailure,
    QuicexpError,
    ResourceExhausted,
)

app = typer.Typer(
    name="quicexp",
    help="A/B experiment analytics for transport and QoE experiments.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
catalog_app = typer.Typer(help="The shared Hive metastore (Derby network server) of the embedded mode.")
app.add_typer(catalog_app, name="catalog")

log = logging.getLogger("quicexp")

#: Every one-line error starts with this (the Airflow bridge looks for it).
ERROR_PREFIX = "quicexp: error:"

# typer ships its own copy of click; its exception base class is public only through this path.
_ClickException = typer.BadParameter.__mro__[2]


DayOption = Annotated[str, typer.Option("--date", "-d", help="Logical day, YYYY-MM-DD.")]
ForceOption = Annotated[
    bool,
    typer.Option("--force", help="Process a day after today (UTC), which is refused otherwise."),
]


def day_to_process(value: str, force: bool = False) -> date:
    """The --date of a command that writes the lake for that day: YYYY-MM-DD, and not after
    today (UTC) unless forced: nothing can have been uploaded for a day that has not begun, so
    a future day is a typo or a wrong clock, and processing it would file late events under it."""
    d = parse_day(value)
    today = datetime.now(UTC).date()
    if d > today:
        if not force:
            raise ConfigError(
                f"day {d} is in the future (today is {today}, UTC): nothing is uploaded for it "
                "yet; pass --force to process it anyway"
            )
        log.warning("day %s is in the future (today is %s, UTC): processed because of --force", d, today)
    return d


def _settings() -> Settings:
    settings = load_settings()
    log_to_file(settings)
    return settings


#: What `results` and `report` read: the sufficient-statistics mart and the results, whose size
#: follows the registry (experiments x metrics x segments x days), not the events; a small input
#: for the JIT at any event volume (quicexp.spark.jit_options).
MART_INPUT_BYTES = 0


def _spark(settings: Settings, app_name: str, input_bytes: int | None = None):
    """The command's session; ``input_bytes``: what it will read, when known (sets the JIT)."""
    from quicexp.spark import build_spark

    started = time.monotonic()
    spark = build_spark(settings, app_name, input_bytes=input_bytes)
    log.info("spark session up in %.1fs (master %s)", time.monotonic() - started, settings.spark.master)
    return spark


@app.command("setup-jars")
def setup_jars() -> None:
    """Fetch the JVM jars (Delta, Derby client/server, PostgreSQL JDBC) into the jar cache, and make
    the driver JVM's class-data archive (once)."""
    from quicexp.class_archive import ensure_class_archive
    from quicexp.jars import ensure_jars

    settings = _settings()
    paths = ensure_jars(settings.jar_cache, log=log.info)
    typer.echo(f"{len(paths)} jars ready in {settings.jar_cache}")
    archive = ensure_class_archive(settings, log=log.info)
    if archive is not None:
        typer.echo(f"JVM class-data archive ready: {archive}")


@catalog_app.command("start")
def catalog_start() -> None:
    """Start the metastore server (no-op when it runs already)."""
    from quicexp.catalog import catalog_status, ensure_catalog

    settings = _settings()
    ensure_catalog(settings)
    typer.echo(catalog_status(settings))


@catalog_app.command("stop")
def catalog_stop() -> None:
    """Stop the metastore server."""
    from quicexp.catalog import catalog_status, stop_derby

    settings = _settings()
    stop_derby(settings)
    typer.echo(catalog_status(settings))


@catalog_app.command("status")
def catalog_status_cmd() -> None:
    """Say whether the metastore server runs."""
    from quicexp.catalog import catalog_status

    typer.echo(catalog_status(_settings()))


@app.command()
def ingest(
    day: DayOption,
    strict: Annotated[
        bool, typer.Option("--strict", help="Fail the day on a landing file that cannot be read (default: quarantine it by name).")
    ] = False,
    force: ForceOption = False,
) -> None:
    """Load one upload day from the landing zone into bronze Delta tables."""
    import jobs.ingest
    from jobs.ingest.landing import day_bytes, find_batches
    from quicexp import telemetry

    settings, d = _settings(), day_to_process(day, force)
    find_batches(settings.landing_root, d, telemetry.EVENT_KINDS)  # landing errors before a JVM starts
    spark = _spark(settings, "quicexp-ingest", day_bytes(settings.landing_root, d))
    summary = jobs.ingest.run(spark, settings, d, strict=strict)
    typer.echo(
        f"ingest {d}: read {summary.total('rows_read')}, loaded {summary.total('rows_loaded')}, "
        f"quarantined {summary.total('rows_quarantined')}, duplicate {summary.total('rows_duplicate')}"
    )


@app.command()
def dbt(
    command: Annotated[str, typer.Argument(help="dbt command: build, run, test, docs generate…")],
    day: DayOption,
    select: Annotated[str | None, typer.Option("--select", "-s", help="dbt node selection.")] = None,
    exclude: Annotated[str | None, typer.Option("--exclude", help="dbt nodes left out of the selection.")] = None,
    full_refresh: Annotated[bool, typer.Option("--full-refresh", help="Rebuild incremental models.")] = False,
    force: ForceOption = False,
) -> None:
    """Run dbt in the pipeline's Spark session (publishes the registry first)."""
    import jobs.registry
    from jobs.ingest.landing import day_bytes
    from quicexp.app.dbt import run_dbt

    settings, d = _settings(), day_to_process(day, force)
    # the day's uploads stand for the day's data; a full refresh reads every day (size unknown)
    spark = _spark(settings, "quicexp-dbt", None if full_refresh else day_bytes(settings.landing_root, d))
    extra = (
        (["--select", select] if select else [])
        + (["--exclude", exclude] if exclude else [])
        + (["--full-refresh"] if full_refresh else [])
    )
    run_dbt(command, settings, d, extra, alongside=partial(jobs.registry.run, spark, settings, d))


@app.command()
def results(day: DayOption, force: ForceOption = False) -> None:
    """Compute gold.experiment_results from the sufficient-statistics mart."""
    import jobs.experiment_results

    settings, d = _settings(), day_to_process(day, force)
    n = jobs.experiment_results.run(_spark(settings, "quicexp-results", MART_INPUT_BYTES), settings, d)
    typer.echo(f"results {d}: {n} comparisons")


@app.command()
def report(
    experiments: Annotated[
        list[str],
        typer.Option("--experiment", "-e", help="Experiment id from the registry (repeat for several)."),
    ],
    day: DayOption,
) -> None:
    """Write the HTML (and Markdown) reports of experiments for a day, in one Spark session.

    Every experiment is attempted; when some fail, the others are still written and the command
    ends with one line naming the failed ones (non-zero exit).
    """
    import jobs.report
    from quicexp.registry import load_registry

    settings, d = _settings(), parse_day(day)
    wanted = list(dict.fromkeys(experiments))  # each once, in the order given
    registry = load_registry(settings.registry_file)
    for experiment in wanted:  # an unknown id is a usage error, found before the JVM starts
        registry.get(experiment)
    spark = _spark(settings, "quicexp-report", MART_INPUT_BYTES)
    failed: list[str] = []
    for experiment in wanted:
        try:
            paths = jobs.report.run(spark, settings, d, experiment)
        except QuicexpError as e:
            failed.append(f"{experiment} ({e})")
        except Exception as e:  # a Spark or rendering failure of one report must not stop the others
            log.exception("report %s %s failed", experiment, d)
            failed.append(f"{experiment} ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})")
        else:
            typer.echo(f"report: {paths.html}")
    if failed:
        raise PartialFailure(f"{len(failed)} of {len(wanted)} reports failed: {'; '.join(failed)}")


@app.command("run-day")
def run_day(
    day: DayOption,
    skip: Annotated[
        list[str] | None,
        typer.Option("--skip", help="A step not to run (repeatable): ingest, ingest_qlog, dbt_build, results or reports."),
    ] = None,
    force: ForceOption = False,
) -> None:
    """Registry → ingest → dbt build → results → reports for one day, in one Spark session."""
    from jobs.ingest.landing import day_bytes
    from quicexp.app.daily import check_steps
    from quicexp.app.daily import run_day as pipeline_run_day

    skip = skip or []
    check_steps(skip)  # before the JVM starts
    settings, d = _settings(), day_to_process(day, force)
    CONSOLE_FILTER.progress = ("quicexp.app",)  # one line per stage; the jobs' detail in the log
    typer.echo(f"logs: {settings.home / 'logs'} (quicexp.log, spark.log, dbt.log)")
    spark = _spark(settings, "quicexp-daily", day_bytes(settings.landing_root, d))
    outcome = pipeline_run_day(spark, settings, d, skip=skip)
    for path in outcome.reports:
        typer.echo(f"report: {path}")


@app.command()
def plan(
    day: DayOption,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON line (what the DAG reads).")] = False,
) -> None:
    """The day's plan: landing folder, reports folder, running experiments, each step's command."""
    import json

    settings, d = _settings(), parse_day(day)
    from quicexp.app.daily import plan as day_plan

    the_plan = day_plan(settings, d)
    if as_json:
        typer.echo(json.dumps(the_plan))
        return
    typer.echo(f"{the_plan['day']}: landing {the_plan['landing_dir']}")
    typer.echo(f"experiments: {', '.join(the_plan['experiments']) or '(none running)'}")
    for step in the_plan["steps"]:
        argv = step["argv"]
        typer.echo(f"  {step['name']:<10} {'quicexp ' + ' '.join(argv) if argv else '(nothing to do)'}")


@app.command("settings")
def settings_cmd(
    shell: Annotated[
        bool, typer.Option("--shell", help="NAME=value lines (shell-quoted) for scripts, not JSON.")
    ] = False,
) -> None:
    """The effective settings (defaults < QUICEXP_CONFIG file < QUICEXP_* variables).

    Secrets (passwords) are never printed.
    """
    import json
    import shlex

    data = _settings().model_dump(mode="json")
    flat: dict[str, object] = {}

    def walk(prefix: str, value: object) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                walk(f"{prefix}__{key}" if prefix else key, inner)
        elif not any(word in prefix.lower() for word in ("password", "secret")):
            flat[prefix.upper()] = value

    walk("", data)
    if shell:
        for name, value in flat.items():
            text = json.dumps(value) if isinstance(value, dict | list) else str(value)
            typer.echo(f"{name}={shlex.quote(text)}")
    else:
        typer.echo(json.dumps(flat, indent=2, sort_keys=True))


@app.command()
def demo(
    days: Annotated[int, typer.Option(min=1, max=60, help="Days to simulate and process.")] = 3,
    clients: Annotated[int, typer.Option(min=100, max=10_000_000, help="Simulated clients.")] = 4000,
) -> None:
    """Simulate the FHOL experiment and run the whole pipeline on it, day by day."""
    from jobs.ingest.landing import day_bytes
    from quicexp.app.demo import EXPERIMENT, print_outcome, run_demo, simulate
    from quicexp.registry import load_registry

    settings = _settings()
    load_registry(settings.registry_file).get(EXPERIMENT)  # fail early if the registry lost the experiment
    CONSOLE_FILTER.progress = ("quicexp.app",)  # one line per day and stage; the jobs' detail in the log
    typer.echo(f"logs: {settings.home / 'logs'} (quicexp.log, spark.log, dbt.log)")
    # Simulate before the JVM starts: the simulator's worker processes must not inherit
    # the Py4J gateway's socket.
    first = simulate(settings, days, clients)
    sizes = [day_bytes(settings.landing_root, first + timedelta(days=i)) for i in range(days)]
    spark = _spark(settings, "quicexp-demo", None if None in sizes else sum(sizes))  # one session, every day
    outcome = run_demo(spark, settings, first, days)
    print_outcome(outcome, settings)


def _register_commands() -> None:
    """The subcommands whose implementation lives beside the application (quicexp.app.*)."""
    from quicexp.app.commands.lab import lab_command
    from quicexp.app.commands.plan_experiment import plan_experiment_command
    from quicexp.app.commands.qlog import qlog_command
    from quicexp.app.commands.simulate import simulate
    from quicexp.app.commands.stats import stats_command
    from quicexp.app.serve import serve_app
    from quicexp.app.superset.cli import superset_app

    app.command("simulate", help="Generate landing-zone telemetry from a simulator scenario.")(simulate)
    app.command("stats", help="Run the statistics engine on a sufficient-statistics file.")(stats_command)
    app.command("ingest-qlog", help="Load one upload day's qlog files into bronze.qlog_connections.")(qlog_command)
    app.command("lab", short_help="Run a real-stack A/B experiment (ngtcp2, aioquic) into the landing zone.")(lab_command)
    app.command(
        "plan-experiment",
        help="Units and days an experiment's declared metrics need under the decision rule.",
    )(plan_experiment_command)
    app.add_typer(serve_app, name="serve")
    app.add_typer(superset_app, name="superset")


_register_commands()


class _ConsoleFilter(logging.Filter):
    """What reaches the console: progress (INFO) of the loggers in ``progress``, and warnings
    of everyone but the per-row messages that a step summarises in one line (``summarised``).
    Everything also goes to ``<home>/logs/quicexp.log``."""

    def __init__(self) -> None:
        super().__init__()
        self.progress: tuple[str, ...] = ("quicexp", "jobs", "simulation")
        self.summarised: tuple[str, ...] = ("stats.engine",)

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name.startswith(self.summarised) and record.levelno < logging.ERROR:
            return False
        return record.levelno >= logging.WARNING or record.name.startswith(self.progress)


CONSOLE_FILTER = _ConsoleFilter()


#: One record, one line: ``<home>/logs/quicexp.log``, and stderr when it is not a terminal.
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def configure_logging() -> None:
    """Progress lines (counts, seconds, rates) on stderr; Spark's Python bridges quiet.

    On a terminal, rich's columns; otherwise (CI, ``| tee``, an Airflow task) LOG_FORMAT's plain
    lines: no colour codes, no padding to a width, one timestamp (the Airflow bridge,
    dags/quicexp_airflow/pipeline.py, takes it off and logs each line at its level)."""
    console: logging.Handler
    if sys.stderr.isatty():
        from rich.console import Console
        from rich.logging import RichHandler

        console = RichHandler(console=Console(stderr=True), show_path=False, markup=False)
    else:
        console = logging.StreamHandler(sys.stderr)
        console.setFormatter(logging.Formatter(LOG_FORMAT))
    console.addFilter(CONSOLE_FILTER)
    logging.basicConfig(level=logging.INFO, format="%(message)s", handlers=[console])
    for noisy in ("py4j", "pyspark"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def log_to_file(settings: Settings) -> Path:
    """Every log record of this process also goes to ``<home>/logs/quicexp.log``; its path."""
    path = settings.home / "logs" / "quicexp.log"
    root = logging.getLogger()
    if not any(getattr(h, "baseFilename", None) == str(path) for h in root.handlers):
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(path)
        handler.setFormatter(logging.Formatter(LOG_FORMAT))
        root.addHandler(handler)
    return path


def _error(message: str) -> None:
    typer.echo(f"{ERROR_PREFIX} {message}", err=True)


def _log_unexpected(exc: BaseException) -> str:
    """Write the traceback of an unexpected error to the log folder; return where."""
    import tempfile
    import traceback

    try:
        folder = load_settings().home / "logs"
        folder.mkdir(parents=True, exist_ok=True)
    except Exception:  # the settings themselves may be what is broken
        folder = Path(tempfile.gettempdir())
    path = folder / "quicexp-errors.log"
    with path.open("a") as out:
        out.write(f"--- {time.strftime('%Y-%m-%dT%H:%M:%S')} quicexp {' '.join(sys.argv[1:])}\n")
        out.write("".join(traceback.format_exception(exc)))
    return str(path)


def _out_of_memory() -> ResourceExhausted | None:
    """A failed command's cause when its Spark JVM ran out of memory on the way (the job's own
    exception then names an effect: a stopped context, a lost executor)."""
    from quicexp.spark import out_of_memory

    found = out_of_memory()
    if found is None:
        return None
    error, log_file = found
    return ResourceExhausted(
        f"Spark ran out of memory ({error}; {log_file}): raise spark.driver_memory "
        "(QUICEXP_SPARK__DRIVER_MEMORY), or spark.shuffle_partitions so that each task holds less"
    )


def _report(exc: QuicexpError) -> int:
    _error(str(exc))
    return exc.exit_code


def main(argv: list[str] | None = None) -> int:
    """Console entry point: one line on stderr and the exit code of the error's kind.

    The table (quicexp.errors.EXIT_CODES, README.md): 0 success, 1 unexpected error (a bug; the
    traceback goes to ``<home>/logs/quicexp-errors.log``), 2 usage/config, 3 bad input data,
    4 failed data-quality check, 5 service not available, 6 partial failure, 7 Spark out of memory,
    130 interrupted.
    """
    configure_logging()
    try:
        result = app(args=argv, prog_name="quicexp", standalone_mode=False)
    except typer.Abort:
        _error("aborted")
        return 130
    except KeyboardInterrupt:
        _error("interrupted")
        return 130
    except _ClickException as exc:  # usage errors: bad option, missing argument, no such command
        if exc.format_message():  # empty when no arguments were given: the help was printed
            _error(exc.format_message())
        return ConfigError.exit_code
    except QuicexpError as exc:
        # a usage error, a failed data test or a partial failure says what it is; anything else
        # may be the effect of a JVM that ran out of memory
        if not isinstance(exc, (ConfigError, DataQualityError, PartialFailure)) and (oom := _out_of_memory()):
            log.error("%s", exc)
            return _report(oom)
        _error(str(exc).splitlines()[0] if str(exc) else exc.kind)
        return exc.exit_code
    except FileNotFoundError as exc:
        _error(f"file not found: {exc.filename or exc}")
        return InputDataError.exit_code
    except Exception as exc:
        if oom := _out_of_memory():
            log.error("%s", exc, exc_info=exc)
            return _report(oom)
        where = _log_unexpected(exc)
        first = str(exc).splitlines()[0] if str(exc) else ""
        _error(f"unexpected {type(exc).__name__}: {first} (traceback in {where})")
        return 1
    # standalone_mode=False: click *returns* the code of typer.Exit instead of raising it.
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    sys.exit(main())
