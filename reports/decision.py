"""The decision as every screen shows it first: the verdict in words, then one card per declared
metric (control, treatment, delta, the tests' bounds against the margin or the minimum effect),
coloured by what the metric's direction makes of it — better, worse or not yet shown — never by
the sign of the delta.

Pure: built from one verdict row of gold.experiment_decisions and that look's rows of
gold.experiment_decision_tests (stats.decision), for the HTML report, the console and the
notebook alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from reports.fmt import MISSING, is_missing, number, percent, value_text, with_unit
from reports.metrics import display, metric_label

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
}

_ROLE_ORDER = {"success": 0, "guardrail": 1, "mechanism": 2}


@dataclass(frozen=True)
class Card:
    """One declared metric at one look, ready to show.

    ``low``/``high`` are the always-valid one-sided bounds of the metric's two tests (each end
    is the bound its own test compares with ``threshold``), relative (fractions) unless
    ``absolute``; ``threshold`` is the margin or 0 in the same scale.
    """

    role: str
    label: str
    unit: str
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
    absolute: bool
    better_higher: bool
    threshold_text: str

    @property
    def interval_text(self) -> str:
        if self.absolute:
            u = self.unit
            return f"[{with_unit(number(self.low, signed=True), u)}, {with_unit(number(self.high, signed=True), u)}]"
        return f"[{percent(self.low)}, {percent(self.high)}]"


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


def reason_text(reason: str) -> str:
    """``guardrail_inferior:mtbr`` -> "mean time between rebuffers is worse beyond its margin"."""
    code, _, name = reason.partition(":")
    names = ", ".join(_label(n) for n in name.split(",")) if name else ""
    return {
        "gate_failed": f"the {name.upper() if name == 'srm' else name} check failed",
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


def _label(name: str) -> str:
    metric, _, q = name.partition("@p")
    return metric_label(metric, float(q) / 100 if q else None)


def view(verdict: Any, tests: pd.DataFrame) -> DecisionView:
    """The view of one verdict row and its look's test rows (one treatment arm)."""
    v = verdict
    headline, tone = VERDICT_TEXT.get(v["verdict"], (str(v["verdict"]), "neutral"))
    reasons = [str(r) for r in (v["reasons"] if v["reasons"] is not None else [])]
    cards = sorted(_cards(tests), key=lambda c: (_ROLE_ORDER[c.role], c.label))
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
    """One sentence: what to do and why."""
    main = [reason_text(r) for r in reasons
            if not r.startswith(("treatment_active", "treatment_not_shown"))]  # fmt: skip
    why = "; ".join(main[:3]) + ("; …" if len(main) > 3 else "")
    if verdict == "keep_running" and days is not None:
        why += f" — about {days:.0f} more day{'s' if days != 1 else ''} to the planned power"
    return why


def _cards(tests: pd.DataFrame) -> list[Card]:
    out = []
    if tests is None or tests.empty:
        return out
    keyed = tests.assign(_q=tests["quantile_p"].astype(float).fillna(-1.0))
    for (_, metric, _), rows in keyed.groupby(["role", "metric", "_q"], sort=False):
        out.append(_card(metric, rows))
    return out


def _card(metric: str, rows: pd.DataFrame) -> Card:
    r0 = rows.iloc[0]
    q = None if is_missing(r0["quantile_p"]) else float(r0["quantile_p"])
    disp = display(metric)
    role = r0["role"]
    by = {t: r for t, r in zip(rows["test"], rows.itertuples(index=False), strict=True)}
    absolute = r0["threshold_scale"] == "absolute"
    higher = r0["better"] == "increase"
    bounds = [float(r.bound) for r in by.values() if not is_missing(r.bound)]
    delta = r0["delta_abs"] if absolute else r0["delta_rel"]
    est = float("nan") if is_missing(delta) else float(delta)
    low = min([*bounds, est]) if bounds else float("nan")
    high = max([*bounds, est]) if bounds else float("nan")
    status = _status(role, {t: bool(r.passed) for t, r in by.items()})
    words, tone = STATUS_TEXT[status]
    thr = float(r0["threshold"]) if role == "guardrail" else 0.0
    if role == "guardrail":
        thr = float(by["non_inferiority"].threshold) if "non_inferiority" in by else thr
    scale = disp.scale if absolute else 1.0
    unit = disp.abs_unit if absolute else "%"
    return Card(
        role=role, label=metric_label(metric, q), unit=disp.unit,
        control=value_text(r0["value_control"], disp), treatment=value_text(r0["value_treatment"], disp),
        delta=with_unit(number(float(r0["delta_abs"]) * disp.scale, signed=True), disp.abs_unit)
        if not is_missing(r0["delta_abs"]) else MISSING,
        relative=percent(r0["delta_rel"]) if not absolute else MISSING,
        status=status, status_text=words, tone=tone,
        low=low * scale, high=high * scale, estimate=est * scale, threshold=thr * scale,
        absolute=absolute, better_higher=higher,
        threshold_text=_threshold_text(role, thr * scale, absolute, unit),
    )  # fmt: skip


def _threshold_text(role: str, threshold: float, absolute: bool, unit: str) -> str:
    if role != "guardrail":
        return "0"
    return with_unit(number(threshold, signed=True), unit) if absolute else percent(threshold)


def _status(role: str, passed: dict[str, bool]) -> str:
    if role == "success":
        return "worse" if passed.get("deterioration") else (
            "better" if passed.get("superiority") else "not_shown")  # fmt: skip
    if role == "guardrail":
        return "beyond_margin" if passed.get("inferiority") else (
            "within_margin" if passed.get("non_inferiority") else "not_shown")  # fmt: skip
    return "active" if passed.get("treatment_active") else "not_active"


def views(verdicts: pd.DataFrame, tests: pd.DataFrame) -> list[DecisionView]:
    """One view per verdict row (e.g. each treatment arm of one look)."""
    out = []
    for _, v in verdicts.iterrows():
        t = tests[(tests["experiment_id"] == v["experiment_id"])
                  & (tests["treatment_arm"] == v["treatment_arm"])
                  & (pd.to_datetime(tests["as_of_date"]) == pd.Timestamp(v["as_of_date"]))]  # fmt: skip
        out.append(view(v, t))
    return out
