"""The run's simulated pipeline lakes: the shared one (end-to-end, report, serving and bench tests)
and, from the same builder, the small one of the DAG and cluster tests (tests/conftest.py).

One simulated fleet carries four experiments at once (independent assignment salts), so one
two-day pipeline run feeds every end-to-end case: FHOL (seed 000), multipath with re-injection
(seed 004), an A/A test, and a forced sample ratio mismatch (the simulator splits 60/40 while the
registry says 50/50). Every pipeline day costs minutes on two cores, so the suite runs these days
once (``quicexp.app.daily.run_day`` in the run's Spark session) and the tests read them:

- tests/e2e: rows accounted for, intervals, the report of the last day;
- tests/report: the HTML reports against ``gold.experiment_results``;
- tests/serving: the Thrift server, Superset and the notebook over its silver and gold;
- tests/bench: the DuckDB reference over the same landing files, compared with these gold tables.

No test may write into the shared lake's namespace (the DAG tests re-run a day of the small one,
which must leave every table as it was). The fixture records the Delta version of every gold
table after each day, so a test can read a lake as of any of its days.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from quicexp.config import REPO_ROOT, Settings
from quicexp.registry import Arm, Experiment, Registry, load_registry

START = date(2026, 6, 15)
DAYS = 2
CLIENTS = 2000
SEED = 7
FHOL = "fhol_2026_06"
NAMESPACE = "e2e"


def _experiment(exp_id: str, title: str, arms: list[str], metrics: dict | None = None) -> Experiment:
    share = 1 / len(arms)
    return Experiment(id=exp_id, title=title, start_date=START, metrics=metrics,
                      arms=[Arm(name=a, share=share, is_control=i == 0) for i, a in enumerate(arms)])  # fmt: skip


def mixed_scenario():
    """fhol.yaml's fleet with multipath-capable video and three more experiments on it."""
    from simulation.scenario import load_scenario, validate_scenario

    data = load_scenario(REPO_ROOT / "simulation" / "scenarios" / "fhol.yaml").model_dump()
    data["name"] = "report_mix"
    data["workloads"]["video"].update(two_paths=True, connection_per_chunk=True)
    data["experiments"] += [
        {"id": "report_aa", "salt": "report_aa", "arms": [{"name": "control"}, {"name": "same"}]},
        {"id": "report_srm", "salt": "report_srm",
         "arms": [{"name": "control", "weight": 0.6}, {"name": "treatment", "weight": 0.4}]},
        {"id": "report_mp", "salt": "report_mp",
         "arms": [{"name": "single_path"}, {"name": "reinjection", "transport": {"multipath": "reinjection"}}]},
    ]  # fmt: skip
    return validate_scenario(data, source="report_mix")


def mixed_registry() -> Registry:
    """The repo's FHOL experiment plus the three the mixed scenario adds."""
    return Registry(experiments=[
        load_registry(REPO_ROOT / "registry" / "experiments.yml").get(FHOL),
        _experiment("report_aa", "A/A: the same transport in both arms", ["control", "same"]),
        # declares a success metric, so that its failed sample-ratio gate shows in a verdict
        _experiment("report_srm", "Forced sample ratio mismatch", ["control", "treatment"],
                    {"success": [{"metric": "request_latency", "minimum_effect": 0.01}]}),
        _experiment("report_mp", "Multipath QUIC with re-injection vs single path", ["single_path", "reinjection"]),
    ])  # fmt: skip


#: Spark sums doubles in an order that depends on partitioning, so a rerun over the same rows
#: may differ in the last bits (relative 1e-16 in the sums, up to 1e-12 after the engine's
#: differences of near-equal numbers). Tables are compared within these tolerances; rounding
#: to n digits would not do (a value on a rounding boundary flips).
RTOL, ATOL = 1e-9, 1e-9


def _is_float_array(column: pd.Series) -> bool:
    first = column.dropna()
    return (
        len(first) > 0
        and isinstance(first.iloc[0], (list, tuple, np.ndarray))
        and any(isinstance(v, float) for v in first.iloc[0])
    )


def _order_key(column: pd.Series) -> pd.Series:
    """A sort key of one exact column: the values themselves where pandas can sort them (numbers,
    times, strings with missing values), else their repr."""
    if column.dtype.kind in "biuM":
        return column
    if column.dtype == object and all(v is None or isinstance(v, str) for v in column):
        return column
    return column.map(repr)


def _canonical(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows in an order that float noise cannot change: exact columns first, floats rounded."""
    frame = frame.copy()
    for column in frame.columns:
        if frame[column].dtype != object:
            continue
        if any(isinstance(v, (list, tuple, np.ndarray, dict)) for v in frame[column]):
            frame[column] = frame[column].map(
                lambda v: (
                    None
                    if v is None
                    else (tuple(sorted(v.items())) if isinstance(v, dict) else tuple(v))
                )
            )
    floats = [c for c in frame.columns if pd.api.types.is_float_dtype(frame[c])]
    arrays = [c for c in frame.columns if _is_float_array(frame[c])]
    exact = [c for c in frame.columns if c not in floats and c not in arrays]
    order = pd.DataFrame({f"k{i}": _order_key(frame[c]) for i, c in enumerate(exact)})
    for i, c in enumerate(floats):
        order[f"f{i}"] = frame[c].map(lambda v: "nan" if pd.isna(v) else f"{v:.6g}")
    index = (
        order.sort_values(list(order.columns), kind="stable").index
        if len(order.columns)
        else frame.index
    )
    return frame.loc[index].reset_index(drop=True)


def _tables(spark, schema: str) -> list[str]:
    """The tables of ``schema``: views and the session's temporary views (dbt leaves some) out."""
    return [
        t.name
        for t in spark.catalog.listTables(schema)
        if t.tableType != "VIEW" and not t.isTemporary
    ]


def delta_versions(spark, schema: str) -> dict[str, int]:
    """The current Delta version of every table of ``schema``."""
    return {
        name: int(spark.sql(f"describe history {schema}.{name} limit 1").first()["version"])
        for name in _tables(spark, schema)
    }


def table_snapshots(
    spark, schema: str, versions: dict[str, int] | None = None
) -> dict[str, pd.DataFrame]:
    """Every table of ``schema`` as a pandas frame in canonical row order; with ``versions``
    ({table: Delta version}), those tables as of those versions."""
    if versions is not None:
        return {n: table_snapshot(spark, f"{schema}.{n}", v) for n, v in versions.items()}
    return {name: table_snapshot(spark, f"{schema}.{name}") for name in _tables(spark, schema)}


def table_snapshot(spark, name: str, version: int | None = None) -> pd.DataFrame:
    """One table (as of a Delta version) as a pandas frame: columns sorted, rows canonical."""
    spark.catalog.refreshTable(name)
    frame = (
        spark.table(name)
        if version is None
        else spark.sql(f"select * from {name} version as of {version:d}")
    )
    frame = frame.select(*sorted(frame.columns))
    # Arrow moves the rows to pandas 5-7x faster than row by row (same dtypes); set only here,
    # so the pipeline code the tests run keeps its own conversion.
    arrow = "spark.sql.execution.arrow.pyspark.enabled"
    saved = spark.conf.get(arrow)
    spark.conf.set(arrow, "true")
    try:
        return _canonical(frame.toPandas())
    finally:
        spark.conf.set(arrow, saved)


def _missing(value) -> bool:
    return value is None or (np.isscalar(value) and bool(pd.isna(value)))


def _equal(a, b) -> bool:
    """Exact equality, with two missing values (None, NaN, NaT) equal."""
    if _missing(a) or _missing(b):
        return _missing(a) and _missing(b)
    return bool(a == b)


def assert_same_tables(actual: dict[str, pd.DataFrame], expected: dict[str, pd.DataFrame]) -> None:
    """Same tables, columns and rows; doubles equal within RTOL/ATOL, everything else exactly."""
    assert sorted(actual) == sorted(expected)
    for name, want in expected.items():
        got = actual[name]
        assert list(got.columns) == list(want.columns), name
        assert len(got) == len(want), f"{name}: {len(got)} rows, expected {len(want)}"
        for column in want.columns:
            where = f"{name}.{column}"
            if pd.api.types.is_float_dtype(want[column]):
                np.testing.assert_allclose(
                    got[column], want[column], rtol=RTOL, atol=ATOL, equal_nan=True, err_msg=where
                )
            elif _is_float_array(want[column]):
                for row, (a, b) in enumerate(zip(got[column], want[column], strict=True)):
                    assert (a is None) == (b is None), f"{where} row {row}"
                    if a is not None:
                        np.testing.assert_allclose(np.asarray(a, float), np.asarray(b, float), rtol=RTOL,
                                                   atol=ATOL, equal_nan=True, err_msg=f"{where} row {row}")  # fmt: skip
            else:
                pairs = zip(got[column], want[column], strict=True)
                differ = [r for r, (a, b) in enumerate(pairs) if not _equal(a, b)]
                assert not differ, (
                    f"{where}: rows {differ[:5]} differ, e.g. {got[column][differ[0]]!r} vs {want[column][differ[0]]!r}"
                )


@dataclass
class PipelineLake:
    settings: Settings
    registry: Registry
    registry_file: Path
    manifest: dict
    days: list[date] = field(default_factory=list)
    outcomes: list = field(default_factory=list)
    # The Delta version of every gold table right after each day's run.
    gold_versions: dict[date, dict[str, int]] = field(default_factory=dict)

    @property
    def last_day(self) -> date:
        return self.days[-1]


def build(
    spark,
    settings: Settings,
    *,
    scenario=None,
    registry: Registry | None = None,
    days: int = DAYS,
    clients: int = CLIENTS,
    skip: tuple[str, ...] = (),
) -> PipelineLake:
    """Simulate a fleet (default: the mixed one, four experiments) and run the pipeline over its
    days, one after the other (without the steps of ``skip``, e.g. ``("reports",)``)."""
    from quicexp.app.daily import run_day
    from simulation.runner import run_scenario

    registry = registry or mixed_registry()
    registry_file = settings.home / "experiments.yml"
    registry_file.parent.mkdir(parents=True, exist_ok=True)
    registry_file.write_text(yaml.safe_dump(registry.model_dump(mode="json"), sort_keys=False))
    settings = settings.model_copy(update={"registry_file": registry_file})
    manifest = run_scenario(
        scenario or mixed_scenario(), settings.landing_root, days=days, clients=clients, workers=2, seed=SEED
    )
    lake = PipelineLake(settings, registry, registry_file, manifest,
                        days=[START + timedelta(days=i) for i in range(days)])  # fmt: skip
    for day in lake.days:
        lake.outcomes.append(run_day(spark, settings, day, registry, skip=skip))
        lake.gold_versions[day] = delta_versions(spark, settings.gold_schema)
    return lake
