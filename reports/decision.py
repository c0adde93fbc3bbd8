"""The decision as every screen shows it first: the verdict in words, then one card per declared
metric (control, treatment, delta, the tests' bounds against the margin or the minimum effect),
coloured by what the metric's direction makes of it — better, worse or not yet shown — never by
the sign of the delta.

Pure: built from one verdict row of gold.experiment_decisions and that look's rows of
gold.experiment_decision_tests (stats.decision), for the HTML report, the console and the
notebook alike. The minimum effects come from the experiment's declaration (the registry), which
the tests do not carry.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from reports.bars import Mark, interval_svg
from reports.fmt import (
    MISSING,
    arm_values,
    decimals_for,
    is_missing,
    number,
    percent,
    shared_decimals,
    with_unit,
)
from reports.metrics import display, metric_label, sort_key

#: verdict -> (headline, tone)
VERDICT_TEXT = {
    "ship": ("Ship", "good"),
    "rollback": ("Roll back", "bad"),
    "keep_running": ("Keep running", "neutral"),
    "no_ship": ("Do not ship", "neutral"),
    "invalid": ("Invalid: do not read the results", "bad"),
}

#: a card's status -> (words, tone)
STATUS_TEXT = {
    "better": ("better", "good"),
    "worse": ("worse", "bad"),
    "not_shown": ("not shown yet", "neutral"),
    "within_margin": ("within its margin", "good"),
    "beyond_margin": ("worse beyond its margin", "bad"),
    "active": ("moved as expected", "good"),
    "not_active": ("not shown to move", "neutral"),
    "no_result": ("no result", "neutral"),
}

ROLES = ("success", "guardrail", "mechanism")
_ROLE_ORDER = {r: i for i, r in enumerate(ROLES)}
#: tests whose bound is a lower bound of the effect when the metric's better direction is
#: "increase" (the others bound it from above); reversed for "decrease"
_TOWARDS_BETTER = ("superiority", "non_inferiority", "treatment_active")


@dataclass(frozen=True)
class Card:
    """One declared metric at one look for one treatment arm, ready to show.

    ``low``/``high`` are the always-valid one-sided bounds of the metric's tests (each end is
    the bound its own test compares with its threshold; ±inf where a side has no bound yet),
    ``estimate`` the delta and ``threshold`` the margin (0 for success and mechanism metrics),
    all in the card's ``axis_unit``: percent of the control on the relative scale, the metric's
    unit on the absolute one (control 0, or an absolute margin).
    """

    role: str
    metric: str
    quantile_p: float | None
    label: str
    unit: str
    arm: str
    control: str
    treatment: str
    delta: str
    relative: str
    status: str
    status_text: str
    tone: str
    low: float
    high: float
    estimate: float
    threshold: float
    minimum_effect: float | None
    absolute: bool
    better_higher: bool
    axis_unit: str
    threshold_text: str
    interval_text: str
    #: False while no test of the metric counts yet (too few events in an arm)
    informative: bool

    @property
    def key(self) -> str:
        """``metric`` or ``metric@p95``, as the decision's reasons name it."""
        q = self.quantile_p
        return self.metric if q is None else f"{self.metric}@p{q * 100:g}"

    @property
    def svg(self) -> str:
        marks = [Mark(0.0, "0", "zero")]
        if self.role == "guardrail" and not is_missing(self.threshold):
            marks.append(Mark(self.threshold, f"margin {self.threshold_text}", "margin"))
        if self.minimum_effect is not None:
            text = _axis_text(self.minimum_effect, self.axis_unit)
            marks.append(Mark(self.minimum_effect, f"min. effect {text}", "minimum"))
        title = f"{self.label}, {self.arm}: {self.delta_text} {self.interval_text} ({self.status_text})"
        return interval_svg(self.low, self.high, self.estimate, marks, self.tone, self.axis_unit, title)

    @property
    def minimum_text(self) -> str:
        """The success metric's minimum effect on the card's axis ("−1.0%"), or ""."""
        return "" if self.minimum_effect is None else _axis_text(self.minimum_effect, self.axis_unit)

    @property
    def delta_text(self) -> str:
        """ "−35 ms (−1.1%)", or the absolute delta alone where the relative one is undefined."""
        return self.delta if self.relative == MISSING else f"{self.delta} ({self.relative})"


@dataclass(frozen=True)
class MetricCard:
    """A declared metric's card: the control's value once, then each treatment arm."""

    role: str
    label: str
    unit: str
    control: str
    threshold_text: str
    arms: list[Card]

    @property
    def tone(self) -> str:
        tones = {c.tone for c in self.arms}
        return "bad" if "bad" in tones else "neutral" if "neutral" in tones else "good"


@dataclass(frozen=True)
class DecisionView:
    """The verdict of one experiment, look and treatment arm."""

    experiment_id: str
    treatment_arm: str
    control_arm: str
    as_of_date: Any
    verdict: str
    headline: str
    tone: str
    reasons: list[str]
    summary: str
    day_of_experiment: int | None
    planned_days: int | None
    days_to_power: float | None
    cards: list[Card] = field(default_factory=list)

    @property
    def success(self) -> list[Card]:
        return [c for c in self.cards if c.role == "success"]

    @property
    def guardrails(self) -> list[Card]:
        return [c for c in self.cards if c.role == "guardrail"]

    @property
    def mechanism(self) -> list[Card]:
        return [c for c in self.cards if c.role == "mechanism"]

    @property
    def day_text(self) -> str:
        """ "day 3 of 14" (or "day 3" without a plan)."""
        if self.day_of_experiment is None:
            return ""
        return f"day {self.day_of_experiment}" + (f" of {self.planned_days}" if self.planned_days else "")


def reason_text(reason: str) -> str:
    """``guardrail_inferior:mtbr`` -> "mean time between rebuffers is worse beyond its margin"."""
    code, _, name = reason.partition(":")
    names = ", ".join(_label(n) for n in name.split(",")) if name else ""
    return {
        "gate_failed": f"the {_check_name(name)} check failed",
        "success_worse": f"{names} is significantly worse",
        "guardrail_inferior": f"{names} is worse beyond its margin",
        "success_better": f"{names} is better",
        "guardrail_noninferior": f"{names} is within its margin",
        "success_not_shown": f"{names} not yet shown better",
        "guardrail_not_shown_noninferior": f"{names} not yet shown within its margin",
        "metric_missing": f"{names} has no result",
        "treatment_active": f"{names} moved as expected (treatment on)",
        "treatment_not_shown_active": f"{names} not shown to move (is the treatment on?)",
        "no_success_metric_declared": "no success metric is declared",
    }.get(code, reason)


def _check_name(name: str) -> str:
    return {"srm": "sample ratio (SRM)"}.get(name, name.replace("_", " "))


def _label(name: str) -> str:
    metric, _, q = name.partition("@p")
    return metric_label(metric, float(q) / 100 if q else None)


def view(verdict: Any, tests: pd.DataFrame, minimum_effects: Mapping[str, float] | None = None) -> DecisionView:
    """The view of one verdict row and its look's test rows (one treatment arm).

    ``minimum_effects``: declared label (``metric`` or ``metric@p95``) -> the success metric's
    minimum relative effect, drawn on its card.
    """
    v = verdict
    headline, tone = VERDICT_TEXT.get(v["verdict"], (str(v["verdict"]), "neutral"))
    reasons = [str(r) for r in (v["reasons"] if v["reasons"] is not None else [])]
    cards = sorted(_cards(tests, str(v["treatment_arm"]), minimum_effects or {}),
                   key=lambda c: (_ROLE_ORDER[c.role], sort_key(c.metric, c.quantile_p)))  # fmt: skip
    days = None if is_missing(v.get("days_to_planned_power")) else float(v["days_to_planned_power"])
    return DecisionView(
        experiment_id=v["experiment_id"], treatment_arm=v["treatment_arm"],
        control_arm=v["control_arm"], as_of_date=v["as_of_date"], verdict=v["verdict"],
        headline=headline, tone=tone, reasons=reasons, summary=_summary(v["verdict"], reasons, days),
        day_of_experiment=_int(v.get("day_of_experiment")), planned_days=_int(v.get("planned_days")),
        days_to_power=days, cards=cards,
    )  # fmt: skip


def _int(value: Any) -> int | None:
    return None if is_missing(value) else int(value)


def _summary(verdict: str, reasons: list[str], days: float | None) -> str:
    """One sentence: why, and for a running experiment how long still."""
    main = [reason_text(r) for r in reasons
            if not r.startswith(("treatment_active", "treatment_not_shown"))]  # fmt: skip
    why = "; ".join(main)
    if verdict == "keep_running" and days is not None:
        why += (f" — about {days:,.0f} more day{'s' if round(days) != 1 else ''} to the planned power"
                if days < 1000 else " — the planned power is out of reach at today's traffic")  # fmt: skip
    return why


def _cards(tests: pd.DataFrame, arm: str, minimum_effects: Mapping[str, float]) -> list[Card]:
    if tests is None or tests.empty:
        return []
    keyed = tests.assign(_q=tests["quantile_p"].astype(float).fillna(-1.0))
    return [_card(metric, rows, arm, minimum_effects)
            for (_, metric, _), rows in keyed.groupby(["role", "metric", "_q"], sort=False)]  # fmt: skip


def _bounds(rows: pd.DataFrame, higher: bool) -> tuple[float, float, bool]:
    """(low, high, informative): each test's bound on its own side; ±inf where a side has no
    (finite) bound yet."""
    low, high, informative = -math.inf, math.inf, False
    for r in rows.itertuples(index=False):
        informative = informative or bool(r.is_informative)
        if is_missing(r.bound):
            continue
        lower = (r.test in _TOWARDS_BETTER) == higher
        if lower:
            low = max(low, float(r.bound))
        else:
            high = min(high, float(r.bound))
    return low, high, informative


def _card(metric: str, rows: pd.DataFrame, arm: str, minimum_effects: Mapping[str, float]) -> Card:
    r0 = rows.iloc[0]
    q = None if is_missing(r0["quantile_p"]) else float(r0["quantile_p"])
    disp = display(metric)
    role = str(r0["role"])
    by = {t: r for t, r in zip(rows["test"], rows.itertuples(index=False), strict=True)}
    absolute = r0["threshold_scale"] == "absolute"
    higher = r0["better"] == "increase"
    scale = disp.scale if absolute else 100.0
    axis_unit = disp.abs_unit if absolute else "%"
    low, high, informative = _bounds(rows, higher)
    est = r0["delta_abs"] if absolute else r0["delta_rel"]
    thr = 0.0
    if "non_inferiority" in by:
        thr = float(by["non_inferiority"].threshold)
    status = _status(role, {t: bool(r.passed) for t, r in by.items()}, est)
    words, tone = STATUS_TEXT[status]
    key = metric if q is None else f"{metric}@p{q * 100:g}"
    minimum = minimum_effects.get(key) if role == "success" and not absolute else None
    control, treatment = arm_values(r0["value_control"], r0["value_treatment"], disp)
    low, high = low * scale, high * scale
    est_d = math.nan if is_missing(est) else float(est) * scale
    delta_abs = math.nan if is_missing(r0["delta_abs"]) else float(r0["delta_abs"]) * disp.scale
    values = [float(v) * disp.scale for v in (r0["value_control"], r0["value_treatment"]) if not is_missing(v)]
    decimals = _delta_decimals(low, high, delta_abs, absolute, values)
    return Card(
        role=role, metric=metric, quantile_p=q, label=metric_label(metric, q), unit=disp.unit, arm=arm,
        control=control, treatment=treatment,
        delta=with_unit(number(delta_abs, decimals, signed=True), disp.abs_unit),
        relative=percent(r0["delta_rel"]),
        status=status, status_text=words, tone=tone, low=low, high=high, estimate=est_d,
        threshold=thr * scale,
        minimum_effect=None if minimum is None else (minimum if higher else -minimum) * 100,
        absolute=absolute, better_higher=higher, axis_unit=axis_unit,
        threshold_text=_axis_text(thr * scale, axis_unit) if role == "guardrail" else "0",
        interval_text=_interval_text(low, high, axis_unit, decimals if absolute else None),
        informative=informative or status == "no_result",
    )  # fmt: skip


def _delta_decimals(low: float, high: float, delta: float, absolute: bool, values: list[float]) -> int | None:
    """Decimals of the absolute delta: on the absolute scale with both bounds finite, two
    significant digits of their half-width (the interval says how many digits mean something);
    else the arms' values' own (the delta is a difference of the numbers beside it)."""
    if absolute and math.isfinite(low) and math.isfinite(high) and high > low:
        return decimals_for((high - low) / 2)
    shared = shared_decimals(values)
    if shared is not None:
        return shared
    return None if is_missing(delta) else decimals_for(abs(delta), 3)


def _axis_text(value: float, unit: str, decimals: int | None = None) -> str:
    if is_missing(value):
        return MISSING
    if unit == "%":
        return percent(value / 100)
    return with_unit(number(value, decimals, signed=True), unit)


def _interval_text(low: float, high: float, unit: str, decimals: int | None) -> str:
    """ "[−2.0%, −0.3%]", "≥ +5.1 ms" (one side bounded) or "unbounded yet"."""
    lo = _axis_text(low, unit, decimals) if math.isfinite(low) else None
    hi = _axis_text(high, unit, decimals) if math.isfinite(high) else None
    if lo and hi:
        return f"[{lo}, {hi}]"
    if lo or hi:
        return f"≥ {lo}" if lo else f"≤ {hi}"
    return "unbounded yet"


def _status(role: str, passed: dict[str, bool], estimate: Any) -> str:
    if is_missing(estimate) and not any(passed.values()):
        return "no_result"
    if role == "success":
        return "worse" if passed.get("deterioration") else (
            "better" if passed.get("superiority") else "not_shown")  # fmt: skip
    if role == "guardrail":
        return "beyond_margin" if passed.get("inferiority") else (
            "within_margin" if passed.get("non_inferiority") else "not_shown")  # fmt: skip
    return "active" if passed.get("treatment_active") else "not_active"


def views(verdicts: pd.DataFrame, tests: pd.DataFrame | None,
          minimum_effects: Mapping[str, float] | None = None) -> list[DecisionView]:  # fmt: skip
    """One view per verdict row (e.g. each treatment arm of one look)."""
    out = []
    for _, v in verdicts.iterrows():
        t = tests
        if t is not None and len(t):
            t = t[(t["experiment_id"] == v["experiment_id"]) & (t["treatment_arm"] == v["treatment_arm"])
                  & (pd.to_datetime(t["as_of_date"]) == pd.Timestamp(v["as_of_date"]))]  # fmt: skip
        out.append(view(v, t, minimum_effects))
    return out


def metric_cards(decisions: list[DecisionView]) -> list[MetricCard]:
    """The cards of one look across its treatment arms: one per declared metric, each arm's
    comparison inside (the control's value is the same for every arm)."""
    groups: dict[tuple, list[Card]] = {}
    for v in decisions:
        for c in v.cards:
            groups.setdefault((c.role, c.metric, c.quantile_p), []).append(c)
    ordered = sorted(groups.items(), key=lambda kv: (_ROLE_ORDER[kv[0][0]], sort_key(kv[0][1], kv[0][2])))
    return [MetricCard(role=cs[0].role, label=cs[0].label, unit=cs[0].unit, control=cs[0].control,
                       threshold_text=cs[0].threshold_text, arms=cs)
            for _, cs in ordered]  # fmt: skip


def minimum_effects(experiment: Any) -> dict[str, float]:
    """Declared label -> minimum relative effect of the experiment's success metrics (registry)."""
    roles = getattr(experiment, "metrics", None)
    return {m.label: float(m.minimum_effect) for m in roles.success} if roles is not None else {}


def declared_keys(tests: pd.DataFrame | None, experiment: Any = None) -> set[tuple[str, float | None]]:
    """(metric, quantile_p) of every declared metric: from the tests, else the registry."""
    keys: set[tuple[str, float | None]] = set()
    if tests is not None and len(tests):
        for m, q in zip(tests["metric"], tests["quantile_p"], strict=True):
            keys.add((str(m), None if is_missing(q) else round(float(q), 6)))
    roles = getattr(experiment, "metrics", None)
    if roles is not None:
        for _, m in roles.declared():
            keys.add((m.metric, None if m.quantile is None else round(float(m.quantile), 6)))
    return keys
