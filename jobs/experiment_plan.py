"""How many units and days an experiment needs for its declared metrics under the decision rule.

Reads the latest overall results of a reference experiment from gold.experiment_results (the
experiment itself once it runs; before it starts, another experiment measuring the same
metrics): each metric's per-unit variance (se_control^2 x n_control) and control value, and the
reference's traffic (units per arm per day). The sizes come from :func:`stats.decision.plan_units`
(each test at its level, at power 1 - beta / (G + 1)).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from jobs.delta_io import qualified
from quicexp.config import ConfigError, Settings
from quicexp.errors import InputDataError
from quicexp.registry import Experiment, Registry

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import SparkSession


@dataclass(frozen=True)
class ExperimentPlan:
    """The sizes each declared test needs, and what the whole rule needs."""

    experiment_id: str
    reference_id: str
    reference_date: str
    tests: pd.DataFrame
    units_per_arm: float
    units_per_arm_per_day: float
    looks: int | None

    @property
    def days(self) -> float:
        return self.units_per_arm / self.units_per_arm_per_day


def plan(
    results: pd.DataFrame,
    experiment: Experiment,
    registry: Registry,
    settings: Settings,
    reference: str | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
) -> ExperimentPlan:
    """Pure step: overall results rows in, the experiment's plan out (module docstring)."""
    import numpy as np

    from quicexp.metrics import load_metrics
    from stats.decision import label, plan_units, required_units, row_labels
    from stats.settings import DecisionPlan

    decision = registry.decision_plans(load_metrics(settings.metrics_file)).get(experiment.id)
    if decision is None:
        raise ConfigError(f"experiment {experiment.id} declares no metrics (registry: metrics:)")
    roles = DecisionPlan.model_validate(decision).roles
    wanted = {label(r) for r in roles if r.role != "mechanism"}
    rows = results.assign(label=row_labels(results["metric"], results["quantile_p"]))
    rows = rows[rows["label"].isin(wanted)]
    if reference is None and len(rows):
        # the experiment itself when it measures every declared metric; else the experiment
        # that measures the most of them, latest first (its gaps are then named below)
        covered = rows.groupby("experiment_id").agg(
            n=("label", "nunique"), last=("as_of_date", "max")
        )
        covered["own"] = covered.index == experiment.id
        reference = covered.sort_values(["n", "own", "last"]).index[-1]
    ref = rows[rows["experiment_id"] == reference] if reference else rows.iloc[0:0]
    missing = wanted - set(ref["label"])
    if ref.empty or missing:
        raise InputDataError(
            f"no results of {', '.join(sorted(missing or wanted))} in {settings.gold_schema}"
            ".experiment_results to size the plan from: run the pipeline over a day of an "
            "experiment that measures them, or name one with --reference"
        )
    latest = ref[ref["as_of_date"] == ref["as_of_date"].max()]
    latest = latest.drop_duplicates("label")
    var = dict(zip(latest["label"], latest["se_control"] ** 2 * latest["n_control"], strict=True))
    mean = dict(zip(latest["label"], latest["value_control"], strict=True))
    start = _start(registry, reference) or ref["as_of_date"].min()
    last = ref["as_of_date"].max()
    days_seen = int((np.datetime64(last, "D") - np.datetime64(start, "D")).astype(int)) + 1
    per_day = float(latest["n_control"].max()) / max(int(days_seen), 1)
    looks = (experiment.planned_days or 30) if experiment.analysis == "sequential" else None
    tests = plan_units(roles, var, mean, alpha, power, looks, n_arms=len(experiment.arms))
    return ExperimentPlan(
        experiment.id, str(reference), str(ref["as_of_date"].max()), tests,
        required_units(tests), per_day, looks,
    )  # fmt: skip


def _start(registry: Registry, experiment_id: str):
    for e in registry.experiments:
        if e.id == experiment_id:
            return e.start_date
    return None


def run(
    spark: SparkSession,
    settings: Settings,
    experiment_id: str,
    registry: Registry,
    reference: str | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
) -> ExperimentPlan:
    """Read the overall results of the declared metrics and size the experiment."""
    from pyspark.sql import functions as F

    experiment = registry.get(experiment_id)
    source = qualified(settings.gold_schema, "experiment_results")
    if not spark.catalog.tableExists(source):
        raise InputDataError(f"{source} does not exist yet: run the pipeline over a day first")
    columns = ["experiment_id", "metric", "quantile_p", "as_of_date", "n_control",
               "value_control", "se_control"]  # fmt: skip
    frame = spark.table(source).where(F.col("segment_type") == "overall")
    have = set(frame.columns)
    if "se_control" not in have:
        raise InputDataError(
            f"{source} predates the arms' standard errors: rerun `quicexp results` for a day"
        )
    results = frame.select(*columns).toPandas()
    return plan(results, experiment, registry, settings, reference, alpha, power)
