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
        raise ConfigError(f"experiment registry {path} is not valid YAML: {str(exc).splitlines()[0]}") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"experiment registry {path}: {where}: {first['msg']}") from None
