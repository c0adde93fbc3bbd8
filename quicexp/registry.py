"""The experiment registry (registry/experiments.yml): what runs, with which arms and split."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictFloat,
    ValidationError,
    field_validator,
    model_validator,
)

from quicexp.config import ConfigError, validate_identifier
from quicexp.metrics import MetricRegistry


class _Strict(BaseModel):
    """Registry entries refuse unknown keys: a misspelt ``end_date`` is an error, not ignored."""

    model_config = ConfigDict(extra="forbid")


class _DeclaredMetric(_Strict):
    """A metric of the metric registry, and for a quantile metric which quantile."""

    metric: str
    quantile: StrictFloat | None = Field(None, gt=0, lt=1)

    @property
    def label(self) -> str:
        q = self.quantile
        return self.metric if q is None else f"{self.metric}@p{q * 100:g}"


class SuccessMetric(_DeclaredMetric):
    """What the experiment is meant to improve, and the smallest relative improvement worth
    shipping (it sizes the experiment and the days-to-power estimate)."""

    minimum_effect: StrictFloat = Field(gt=0)


class Guardrail(_DeclaredMetric):
    """What must not get worse beyond a non-inferiority margin: relative (``margin``), or in
    the metric's unit (``margin_absolute``, where the control can be 0); default: the metric
    registry's."""

    margin: StrictFloat | None = Field(None, gt=0)
    margin_absolute: StrictFloat | None = Field(None, gt=0)

    @model_validator(mode="after")
    def _one_margin(self) -> Guardrail:
        if self.margin is not None and self.margin_absolute is not None:
            raise ValueError(f"guardrail {self.label} has both margin and margin_absolute")
        return self


class Mechanism(_DeclaredMetric):
    """What must move, and which way, if the treatment is on at all."""

    expect: Literal["increase", "decrease"]


class MetricRoles(_Strict):
    """An experiment's declared metrics (docs/stats.md, "Decisions"); every other metric is
    exploratory."""

    success: list[SuccessMetric] = Field(min_length=1)
    guardrails: list[Guardrail] = Field(default_factory=list)
    mechanism: list[Mechanism] = Field(default_factory=list)

    def declared(self) -> list[tuple[str, _DeclaredMetric]]:
        return ([("success", m) for m in self.success]
                + [("guardrail", m) for m in self.guardrails]
                + [("mechanism", m) for m in self.mechanism])  # fmt: skip


class Arm(_Strict):
    name: str
    share: float = Field(gt=0, le=1)
    is_control: bool = False

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return validate_identifier(value, "arm name")


class Experiment(_Strict):
    id: str
    title: str
    description: str = ""
    start_date: date
    end_date: date | None = None
    arms: list[Arm]
    # The plan the statistics are sized to (all optional; see docs/stats.md, "Plan"):
    # units per arm at the end (for an unequal split: total = this x number of arms, shared
    # by the arms' shares), days of daily analysis, and the relative effect the experiment
    # must be able to detect (e.g. 0.03 for 3%), for every metric of the experiment.
    planned_units_per_arm: int | None = Field(None, gt=1)
    planned_days: int | None = Field(None, gt=0)
    target_relative_effect: float | None = Field(None, gt=0)
    # What the experiment decides on (docs/stats.md, "Decisions"), and how it is analysed:
    # always-valid tests at every daily look, or one fixed-horizon look at the planned end.
    metrics: MetricRoles | None = None
    analysis: Literal["sequential", "fixed_horizon"] = "sequential"

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        return validate_identifier(value, "experiment id")

    @model_validator(mode="after")
    def _arms(self) -> Experiment:
        if sum(a.is_control for a in self.arms) != 1:
            raise ValueError(f"experiment {self.id} needs exactly one control arm")
        if abs(sum(a.share for a in self.arms) - 1.0) > 1e-6:
            raise ValueError(f"arm shares of experiment {self.id} must add up to 1")
        if len({a.name for a in self.arms}) != len(self.arms):
            raise ValueError(f"arm names of experiment {self.id} must be unique")
        if self.end_date is not None and self.end_date < self.start_date:
            raise ValueError(f"experiment {self.id} ends ({self.end_date}) before it starts")
        if self.analysis == "fixed_horizon" and self.planned_days is None:
            raise ValueError(f"experiment {self.id}: a fixed-horizon analysis needs planned_days")
        return self

    @property
    def control(self) -> Arm:
        return next(a for a in self.arms if a.is_control)

    def running_on(self, day: date) -> bool:
        return self.start_date <= day and (self.end_date is None or day <= self.end_date)


class Registry(_Strict):
    experiments: list[Experiment]

    @model_validator(mode="after")
    def _unique_ids(self) -> Registry:
        seen: dict[str, str] = {}
        for exp in self.experiments:
            other = seen.get(exp.id.lower())
            if other == exp.id:
                raise ValueError(f"experiment id {exp.id} appears more than once")
            if other is not None:
                raise ValueError(f"experiment ids {other} and {exp.id} differ only in case")
            seen[exp.id.lower()] = exp.id
        return self

    def check_metrics(self, metrics: MetricRegistry) -> Registry:
        """Every declared metric is a registered one (its quantile one the metric reports);
        a metric has one role per experiment; every guardrail has a margin (its own or the
        metric registry's). Raises ValueError naming the experiment and the metric."""
        known = metrics.by_name()
        for exp in self.experiments:
            if exp.metrics is None:
                continue
            seen: set[str] = set()
            for role, m in exp.metrics.declared():
                where = f"experiment {exp.id}: {role} {m.label}"
                metric = known.get(m.metric)
                if metric is None:
                    raise ValueError(f"{where} is not in the metric registry")
                if metric.kind == "quantile" and m.quantile not in metric.quantiles:
                    raise ValueError(f"{where} needs a quantile of {list(metric.quantiles)}")
                if metric.kind != "quantile" and m.quantile is not None:
                    raise ValueError(f"{where}: a {metric.kind} metric has no quantile")
                if m.label in seen:
                    raise ValueError(f"{where} is declared twice")
                seen.add(m.label)
                if isinstance(m, Guardrail) and not _margin(m, metric):
                    raise ValueError(f"{where} needs a margin (here or in the metric registry)")
        return self

    def decision_plans(self, metrics: MetricRegistry) -> dict[str, dict[str, object]]:
        """Per experiment with declared metrics: the fields of ``stats.settings.DecisionPlan``
        (roles with the metric registry's direction and default margins filled in)."""
        self.check_metrics(metrics)
        known = metrics.by_name()
        out: dict[str, dict[str, object]] = {}
        for exp in self.experiments:
            if exp.metrics is None:
                continue
            roles = []
            for role, m in exp.metrics.declared():
                metric = known[m.metric]
                entry: dict[str, object] = {"role": role, "metric": m.metric,
                                            "quantile": m.quantile, "better": metric.direction}  # fmt: skip
                if isinstance(m, SuccessMetric):
                    entry["minimum_effect"] = m.minimum_effect
                elif isinstance(m, Guardrail):
                    entry.update(_margin(m, metric))
                elif isinstance(m, Mechanism):
                    entry["better"] = m.expect
                roles.append(entry)
            out[exp.id] = {"roles": roles, "start_date": exp.start_date,
                           "planned_days": exp.planned_days, "analysis": exp.analysis}  # fmt: skip
        return out

    def get(self, experiment_id: str) -> Experiment:
        for exp in self.experiments:
            if exp.id == experiment_id:
                return exp
        known = ", ".join(e.id for e in self.experiments)
        raise ConfigError(f"unknown experiment {experiment_id!r}; the registry has: {known}")

    def running_on(self, day: date) -> list[Experiment]:
        return [e for e in self.experiments if e.running_on(day)]

    def expected_split(self) -> dict[str, dict[str, float]]:
        return {e.id: {a.name: a.share for a in e.arms} for e in self.experiments}

    def plans(self) -> dict[str, dict[str, object]]:
        """Per experiment with any plan field: the fields of ``stats.settings.ExperimentPlan``."""
        out: dict[str, dict[str, object]] = {}
        for e in self.experiments:
            if e.planned_units_per_arm or e.planned_days or e.target_relative_effect:
                out[e.id] = {
                    "start_date": e.start_date,
                    "planned_units_per_arm": e.planned_units_per_arm,
                    "planned_days": e.planned_days,
                    "target_relative_effect": e.target_relative_effect,
                }
        return out


def _margin(guardrail: Guardrail, metric) -> dict[str, float]:
    """The guardrail's margin: its own, else the metric registry's default; {} if neither."""
    if guardrail.margin is not None:
        return {"margin": guardrail.margin}
    if guardrail.margin_absolute is not None:
        return {"margin_absolute": guardrail.margin_absolute}
    if metric.margin is not None:
        return {"margin": metric.margin}
    if metric.margin_absolute is not None:
        return {"margin_absolute": metric.margin_absolute}
    return {}


def load_registry(path: Path | None = None, metrics: MetricRegistry | None = None) -> Registry:
    """The registry at ``path``; by default the configured one (``Settings.registry_file``).

    Its declared metrics are checked against ``metrics`` (default: the configured metric
    registry, ``quicexp.metrics.load_metrics``).
    """
    if path is None:
        from quicexp.config import load_settings

        path = load_settings().registry_file
    try:
        data = yaml.safe_load(Path(path).read_text())
        registry = Registry.model_validate(data)
        if any(e.metrics is not None for e in registry.experiments):
            from quicexp.metrics import load_metrics

            registry.check_metrics(metrics or load_metrics())
        return registry
    except OSError as exc:
        raise ConfigError(f"cannot read the experiment registry {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(
            f"experiment registry {path} is not valid YAML: {str(exc).splitlines()[0]}"
        ) from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"experiment registry {path}: {where}: {first['msg']}") from None
    except ConfigError:
        raise
    except ValueError as exc:
        raise ConfigError(f"experiment registry {path}: {exc}") from None
