"""The report's header: arms and split, days running, units per arm, SRM verdict, data quality.

A failed sample-ratio check (flag ``srm`` on the day's results, see stats/srm_table.py) turns the
whole report into a warning: the arms' sizes do not match the configured split, so the assignment
or the logging is broken and no delta below can be trusted.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from reports.data import ReportData
from reports.fmt import MISSING, is_missing, number, percent


@dataclass(frozen=True)
class ArmLine:
    name: str
    is_control: bool
    expected_share: str
    units: str
    observed_share: str


@dataclass(frozen=True)
class Header:
    title: str
    experiment_id: str
    description: str
    day: str
    start_date: str
    days_running: int
    arms: list[ArmLine]
    srm_failed: bool
    srm_p: str
    srm_segments: list[str]
    quality: str
    untrusted_rows: int


def _flag_set(flags: object) -> set[str]:
    return set(str(flags).split(";")) if isinstance(flags, str) and flags else set()


def units_per_arm(today: pd.DataFrame) -> dict[str, int]:
    """Largest unit count per arm over the day's overall rows (the SRM check's assignment count)."""
    overall = today[today["segment_type"] == "overall"]
    if overall.empty:
        return {}
    units = {str(overall["control_arm"].iloc[0]): int(overall["n_control"].max())}
    for arm, n in overall.groupby("treatment_arm")["n_treatment"].max().items():
        units[str(arm)] = int(n)
    return units


def srm_verdict(today: pd.DataFrame) -> tuple[bool, float, list[str]]:
    """(experiment-level SRM failed, its p-value, segments with their own SRM)."""
    if today.empty:
        return False, float("nan"), []
    flags = today["flags"].map(_flag_set)
    failed = bool(flags.map(lambda f: "srm" in f).any())
    overall = today[today["segment_type"] == "overall"]["srm_p_value"].dropna()
    p = float(overall.min()) if len(overall) else float("nan")
    seg = today[flags.map(lambda f: "srm_segment" in f) & (today["segment_type"] != "overall")]
    segments = sorted(
        {f"{t}={v}" for t, v in zip(seg["segment_type"], seg["segment_value"], strict=True)}
    )
    return failed, p, segments


def quality_line(data: ReportData) -> str:
    """ "Data quality (uploads 2026-06-15 … 2026-06-17): 1,234,567 rows; 0.10% quarantined, …"."""
    q = data.quality
    if q is None:
        why = data.missing.get("ingest_audit", "no ingest audit")
        return f"Data quality: not available ({why})."
    if not q.rows_read:
        return f"Data quality (uploads {q.first_day} … {q.last_day}): no rows ingested."
    rates = ", ".join(
        f"{percent(q.rate(n), signed=False)} {what}"
        for n, what in (
            (q.rows_quarantined, "quarantined"),
            (q.rows_duplicate, "duplicates"),
            (q.rows_late, "late"),
        )
    )
    return f"Data quality (uploads {q.first_day} … {q.last_day}): {number(q.rows_read, 0)} rows read; {rates}."


def build_header(data: ReportData) -> Header:
    exp, today = data.experiment, data.today
    units = units_per_arm(today)
    total = sum(units.values())
    arms = [
        ArmLine(
            name=a.name,
            is_control=a.is_control,
            expected_share=percent(a.share, signed=False),
            units=number(units[a.name], 0) if a.name in units else MISSING,
            observed_share=percent(units[a.name] / total, signed=False)
            if a.name in units and total
            else MISSING,
        )
        for a in exp.arms
    ]
    failed, p, segments = srm_verdict(today)
    untrusted = int((~today["is_trustworthy"].astype(bool)).sum()) if len(today) else 0
    return Header(
        title=exp.title,
        experiment_id=exp.id,
        description=exp.description,
        day=data.day.isoformat(),
        start_date=exp.start_date.isoformat(),
        days_running=(data.day - exp.start_date).days + 1,
        arms=arms,
        srm_failed=failed,
        srm_p=MISSING if is_missing(p) else (f"{p:.1e}" if p < 0.001 else f"{p:.3f}"),
        srm_segments=segments,
        quality=quality_line(data),
        untrusted_rows=untrusted,
    )
