"""Revisions: an as-of date whose numbers in the lake differ from what its report published.

Each run recomputes the last ``lookback_days`` as-of dates as late uploads arrive (by design), so
the numbers of a day whose report was already sent can change. The report job records, the
first time it publishes an experiment's as-of date, the numbers it published
(:func:`publication`: the verdict of every treatment arm and every overall comparison's arm
values and deltas) in ``gold.experiment_report_published``; every later report of that
experiment compares them with the lake's current numbers for every as-of date up to its own
(:func:`revisions`) and shows each revised date with both values. Pure: frames in, frames and
strings out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from reports.data import as_dates
from reports.decision import ROLES, VERDICT_TEXT
from reports.fmt import MISSING, is_missing, number, with_unit
from reports.metrics import CURVE_METRIC, display, metric_label, sort_key

#: one row per experiment x as_of_date x treatment arm x item (Spark SQL types: the lake table
#: is declared from here); item "verdict" carries the verdict, every other item (a metric,
#: "metric@p95" for a quantile) the overall comparison's numbers
PUBLISHED_TYPES = {
    "experiment_id": "string", "as_of_date": "date", "treatment_arm": "string", "item": "string",
    "role": "string", "verdict": "string", "value_control": "double", "value_treatment": "double",
    "delta_abs": "double", "delta_rel": "double", "published_at": "timestamp",
}  # fmt: skip
NUMBERS = ("value_control", "value_treatment", "delta_abs", "delta_rel")
#: differences below this (relative) are floating-point summation order, not a revision: Spark
#: sums in a partition-dependent order (relative 1e-16 in the sums, up to 1e-12 after the engine)
RTOL = 1e-6


def _item(metric: str, quantile: Any) -> str:
    return metric if is_missing(quantile) else f"{metric}@p{float(quantile) * 100:g}"


def publication(results: pd.DataFrame, decisions: pd.DataFrame | None, roles: dict[str, str] | None = None) -> pd.DataFrame:
    """The numbers a report of one experiment and as-of date publishes: the verdict of each
    treatment arm (``decisions``: that look's rows) and each overall comparison (``results``:
    that day's rows). ``roles``: declared item -> role. Columns: :data:`PUBLISHED_TYPES` but
    ``published_at``."""
    roles = roles or {}
    overall = results[(results["segment_type"] == "overall") & (results["metric"] != CURVE_METRIC)]
    rows = [{"experiment_id": r.experiment_id, "as_of_date": r.as_of_date, "treatment_arm": str(r.treatment_arm),
             "item": _item(r.metric, r.quantile_p), "role": roles.get(_item(r.metric, r.quantile_p)),
             "verdict": None, **{c: _float(getattr(r, c)) for c in NUMBERS}}
            for r in overall.itertuples(index=False)]  # fmt: skip
    if decisions is not None:
        rows += [{"experiment_id": v.experiment_id, "as_of_date": v.as_of_date, "treatment_arm": str(v.treatment_arm),
                  "item": "verdict", "role": None, "verdict": str(v.verdict), **dict.fromkeys(NUMBERS)}
                 for v in decisions.itertuples(index=False)]  # fmt: skip
    cols = [c for c in PUBLISHED_TYPES if c != "published_at"]
    out = pd.DataFrame(rows, columns=cols)
    if len(out):
        out["as_of_date"] = as_dates(out["as_of_date"])
    return out


def _float(value: Any) -> float | None:
    return None if is_missing(value) else float(value)


@dataclass(frozen=True)
class Change:
    """One published number (or verdict) and what the lake says now."""

    arm: str
    item: str
    label: str
    role: str | None
    published: str
    current: str

    @property
    def line(self) -> str:
        return f"{self.label} ({self.arm}): {self.published} → {self.current}"


@dataclass(frozen=True)
class Revision:
    as_of_date: Any
    published_at: Any
    changes: list[Change]

    @property
    def verdict_changed(self) -> bool:
        return any(c.item == "verdict" for c in self.changes)

    @property
    def published_text(self) -> str:
        ts = pd.Timestamp(self.published_at) if self.published_at is not None else None
        return MISSING if ts is None or pd.isna(ts) else ts.strftime("%Y-%m-%d %H:%M UTC")


def _differs(a: Any, b: Any) -> bool:
    if is_missing(a) or is_missing(b):
        return is_missing(a) != is_missing(b)
    a, b = float(a), float(b)
    return abs(a - b) > RTOL * max(abs(a), abs(b)) + 1e-300


def _pair(a: Any, b: Any, show) -> tuple[str, str]:
    """Both values in the same shape, with as many more decimals as it takes (up to three) for
    a visible difference to be visible."""
    base = show(a, None), show(b, None)
    if base[0] != base[1]:
        return base
    for extra in range(1, 4):
        texts = show(a, extra), show(b, extra)
        if texts[0] != texts[1]:
            return texts
    return base


def _delta_shower(metric: str):
    disp = display(metric)

    def show(r: pd.Series, extra: int | None) -> str:
        d = r["delta_abs"]
        if is_missing(d):
            return MISSING
        value = float(d) * disp.scale
        dec = _decimals(value) + (extra or 0)
        text = with_unit(number(value, dec, signed=True), disp.abs_unit)
        rel = r["delta_rel"]
        if not is_missing(rel):
            pct = float(rel) * 100
            rdec = (0 if abs(pct) >= 100 else 1 if abs(pct) >= 1 else 2) + (extra or 0)
            text += f" ({number(pct, rdec, signed=True)}%)"
        return text

    return show


def _decimals(value: float) -> int:
    if value == 0 or not math.isfinite(value):
        return 1
    return max(0, min(4, 2 - math.floor(math.log10(abs(value)))))


def _change(arm: str, item: str, old: pd.Series | None, new: pd.Series | None) -> Change | None:
    ref = old if old is not None else new
    role = None if ref is None or _blank(ref.get("role")) else str(ref.get("role"))
    if item == "verdict":
        was = None if old is None else old["verdict"]
        now = None if new is None else new["verdict"]
        if was == now:
            return None
        words = lambda v: MISSING if v is None else VERDICT_TEXT.get(v, (v,))[0]  # noqa: E731
        return Change(arm, item, "verdict", None, words(was), words(now))
    metric, _, q = item.partition("@p")
    label = metric_label(metric, float(q) / 100 if q else None)
    if new is None:
        return Change(arm, item, label, role, "published", "no longer in the results")
    if old is None:
        return None
    if not any(_differs(old[c], new[c]) for c in NUMBERS):
        return None
    a, b = _pair(old, new, _delta_shower(metric))
    if a == b:  # the delta is the same; an arm's value moved
        disp = display(metric)
        a, b = _pair(old["value_treatment"], new["value_treatment"],
                     lambda v, extra: MISSING if is_missing(v) else with_unit(number(float(v) * disp.scale, extra), disp.unit))  # fmt: skip
    return Change(arm, item, label, role, a, b)


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value) or value == ""


def _order(c: Change) -> tuple:
    if c.item == "verdict":
        return (0, (), c.arm)
    metric, _, q = c.item.partition("@p")
    rank = ROLES.index(c.role) + 1 if c.role in ROLES else len(ROLES) + 1
    return (rank, sort_key(metric, float(q) / 100 if q else None), c.arm)


def revisions(published: pd.DataFrame | None, current: pd.DataFrame) -> list[Revision]:
    """Every as-of date of ``published`` (what the reports published) whose numbers in
    ``current`` (:func:`publication` of the lake's rows now, any dates) differ, oldest first."""
    if published is None or published.empty:
        return []
    pub = published.assign(as_of_date=as_dates(published["as_of_date"]))
    cur = current.assign(as_of_date=as_dates(current["as_of_date"])) if len(current) else current
    out = []
    for day, old_rows in pub.groupby("as_of_date", sort=True):
        new_rows = cur[cur["as_of_date"] == day] if len(cur) else cur
        old_by = {(r["treatment_arm"], r["item"]): r for _, r in old_rows.iterrows()}
        new_by = {(r["treatment_arm"], r["item"]): r for _, r in new_rows.iterrows()} if len(new_rows) else {}
        changes = [c for key in old_by if (c := _change(*key, old_by[key], new_by.get(key))) is not None]
        if changes:
            at = old_rows["published_at"].min() if "published_at" in old_rows else None
            out.append(Revision(day, at, sorted(changes, key=_order)))
    return out


def declared_roles(tests: pd.DataFrame | None) -> dict[str, str]:
    """Declared item (``metric``, ``metric@p95``) -> role, from decision test rows."""
    if tests is None or tests.empty:
        return {}
    items = [_item(m, q) for m, q in zip(tests["metric"], tests["quantile_p"], strict=True)]
    return dict(zip(items, tests["role"].astype(str), strict=True))
