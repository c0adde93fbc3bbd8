"""The experiment registry (registry/experiments.yml): what runs, with which arms and split."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import yaml
from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from quicexp.config import ConfigError, validate_identifier


class Arm(BaseModel):
    name: str
    share: float = Field(gt=0, le=1)
    is_control: bool = False

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return validate_identifier(value, "arm name")


class Experiment(BaseModel):
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
        return self

    @property
    def control(self) -> Arm:
        return next(a for a in self.arms if a.is_control)

    def running_on(self, day: date) -> bool:
        return self.start_date <= day and (self.end_date is None or day <= self.end_date)


class Registry(BaseModel):
    experiments: list[Experiment]

    @model_validator(mode="after")
    def _unique_ids(self) -> Registry:
        seen: set[str] = set()
        for exp in self.experiments:
            if exp.id in seen:
                raise ValueError(f"experiment id {exp.id} appears more than once")
            seen.add(exp.id)
        return self

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


def load_registry(path: Path | None = None) -> Registry:
    """The registry at ``path``; by default the configured one (``Settings.registry_file``)."""
    if path is None:
        from quicexp.config import load_settings

        path = load_settings().registry_file
    try:
        data = yaml.safe_load(Path(path).read_text())
        return Registry.model_validate(data)
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
