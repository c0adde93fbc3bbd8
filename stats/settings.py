"""Typed analysis settings (pydantic, frozen), loadable from JSON, TOML or YAML."""

from __future__ import annotations

import json
import tomllib
from datetime import date
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from stats.corrections import Correction


class ExperimentPlan(BaseModel):
    """What an experiment is sized to (from the experiment registry).

    Attributes:
        start_date: first day of the experiment (day 1 of ``planned_days``).
        planned_units_per_arm: units per arm at the planned end; with an unequal split the
            planned total is this x the number of arms, shared by ``expected_split``.
        planned_days: days of daily analysis; the planned number of looks of the sequence.
        target_relative_effect: the relative effect every metric should be able to detect.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    start_date: date | None = None
    planned_units_per_arm: float | None = Field(None, gt=1.0)
    planned_days: int | None = Field(None, gt=0)
    target_relative_effect: float | None = Field(None, gt=0.0)


class AnalysisSettings(BaseModel):
    """Everything :func:`stats.engine.analyze` can be told.

    Attributes:
        alpha: two-sided level of every interval and of ``is_significant``.
        target_power: power at which ``mde_abs`` / ``mde_rel`` are computed.
        correction: multiple-comparison method for the primary family.
        guardrail_correction: method for the guardrail family (corrected apart).
        guardrail_metrics: metric names treated as guardrails in addition to rows whose
            ``is_guardrail`` is true.
        relative_ci: "delta" or "fieller" interval for the relative delta.
        reference: "t": Welch t with Welch-Satterthwaite df for means, ratios and quantiles
            (proportions always use z); "z": the standard normal for every kind (the
            large-sample reference, kept for the calibration study's comparison).
        cuped: use the covariate columns when present.
        quantile_window: window of the outer CI over which the quantile function's slope
            is read (see :func:`stats.quantile.quantile_arm`).
        srm_alpha: SRM alarm threshold on the chi-square p-value.
        srm_continuity_correction: Yates' correction for two-arm SRM tests (see
            :func:`stats.srm.srm_p_value`).
        srm_segment_scope: "segment": a segment's SRM marks that segment's rows
            untrustworthy; "experiment": it marks the whole experiment (that day).
        srm_metric: metric whose n_units are the assignment counts; default: the largest
            n_units over metrics per arm and segment.
        expected_split: experiment_id -> arm -> weight; experiments not listed: equal split.
        sequential_alpha: level of the confidence sequence (default: ``alpha``).
        sequential_tuning_n: mixing parameter N* of the normal-mixture confidence sequence,
            in total units (both arms), for experiments without a plan in ``plans``.
        plans: experiment_id -> :class:`ExperimentPlan`; sizes the sequence (N* and the number
            of looks), the planned MDE and the power flag (docs/stats.md, "Plan").
        sequential_min_events: a look enters the always-valid interval only when each arm has
            at least this many effective events (``effective_events``; docs/stats.md).
        sequential_min_units: ... and at least this many units: the size from which the
            engine's intervals are validated (docs/stats.md, "Small samples").
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    alpha: float = Field(0.05, gt=0.0, lt=1.0)
    target_power: float = Field(0.8, gt=0.0, lt=1.0)
    correction: Correction = "bh"
    guardrail_correction: Correction = "bh"
    guardrail_metrics: frozenset[str] = frozenset()
    relative_ci: Literal["delta", "fieller"] = "fieller"
    reference: Literal["t", "z"] = "t"
    cuped: bool = True
    quantile_window: Literal["clustered", "iid"] = "clustered"
    srm_alpha: float = Field(0.001, gt=0.0, lt=1.0)
    srm_continuity_correction: bool = True
    srm_segment_scope: Literal["segment", "experiment"] = "segment"
    srm_metric: str | None = None
    expected_split: dict[str, dict[str, float]] = Field(default_factory=dict)
    sequential_alpha: float | None = Field(None, gt=0.0, lt=1.0)
    sequential_tuning_n: float = Field(100_000.0, gt=0.0)
    plans: dict[str, ExperimentPlan] = Field(default_factory=dict)
    sequential_min_events: float = Field(10.0, ge=0.0)
    sequential_min_units: float = Field(100.0, ge=2.0)

    @property
    def seq_alpha(self) -> float:
        """The confidence sequence's level."""
        return self.alpha if self.sequential_alpha is None else self.sequential_alpha

    @classmethod
    def from_file(cls, path: Path) -> AnalysisSettings:
        """Load settings from a .json, .toml or .yaml/.yml file.

        Raises:
            ValueError: unknown extension or invalid content.
            OSError: the file cannot be read.
        """
        text = path.read_text()
        suffix = path.suffix.lower()
        if suffix == ".json":
            data = json.loads(text)
        elif suffix == ".toml":
            data = tomllib.loads(text)
        elif suffix in (".yaml", ".yml"):
            import yaml  # optional dependency, only needed for YAML configs

            data = yaml.safe_load(text) or {}
        else:
            raise ValueError(f"config must be .json, .toml or .yaml, got {path.name}")
        return cls.model_validate(data)


class MetricRole(BaseModel):
    """One declared metric of an experiment and what the decision asks of it.

    Attributes:
        role: ``success`` (what the experiment is meant to improve), ``guardrail`` (what must
            not get worse beyond its margin) or ``mechanism`` (what must move if the treatment
            is on at all).
        metric: the metric's name (the ``metric`` column of the results).
        quantile: for a quantile metric, which quantile (``quantile_p``).
        better: the direction that is better for this metric (the metric registry's
            ``direction``); for a mechanism metric, the direction it is expected to move.
        minimum_effect: success: the smallest relative improvement worth shipping (planning,
            and the days-to-power estimate).
        margin: guardrail: the non-inferiority margin, relative (0.02 = 2% worse at most).
        margin_absolute: guardrail: the margin in the metric's unit (for metrics whose control
            can be 0, where a relative margin is undefined).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Literal["success", "guardrail", "mechanism"]
    metric: str
    quantile: float | None = Field(None, gt=0.0, lt=1.0)
    better: Literal["increase", "decrease"]
    minimum_effect: float | None = Field(None, gt=0.0)
    margin: float | None = Field(None, gt=0.0)
    margin_absolute: float | None = Field(None, gt=0.0)


class DecisionPlan(BaseModel):
    """An experiment's declared metrics and the shape of its analysis.

    Attributes:
        roles: the declared metrics (at least one success metric for a ship decision).
        start_date: day 1 of the experiment.
        planned_days: the planned end is start_date + planned_days - 1.
        analysis: ``sequential``: the always-valid tests at every daily look (ship as soon as
            the rule holds); ``fixed_horizon``: superiority and non-inferiority are tested once,
            at the planned end (deterioration is always watched sequentially).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    roles: tuple[MetricRole, ...]
    start_date: date
    planned_days: int | None = Field(None, gt=0)
    analysis: Literal["sequential", "fixed_horizon"] = "sequential"


class DecisionSettings(BaseModel):
    """Everything :func:`stats.decision.decide` can be told.

    Attributes:
        alpha: the decision's false-ship rate (and the false-rollback rate when nothing moved).
        power: the decision's planned probability to ship when every success metric moves by
            its minimum effect and no guardrail moves.
        srm_alpha: the sample-ratio gate's threshold on the results' ``srm_p_value``.
        sequential_min_units: ... and this many units (as :class:`AnalysisSettings`).
        sequential_min_events: a look counts only when each arm has at least this many
            effective events (as :class:`AnalysisSettings`).
        experiments: experiment_id -> :class:`DecisionPlan`; experiments not listed get no
            verdict.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    alpha: float = Field(0.05, gt=0.0, lt=0.5)
    power: float = Field(0.8, gt=0.5, lt=1.0)
    srm_alpha: float = Field(0.001, gt=0.0, lt=1.0)
    sequential_min_events: float = Field(10.0, ge=0.0)
    sequential_min_units: float = Field(100.0, ge=2.0)
    experiments: dict[str, DecisionPlan] = Field(default_factory=dict)
