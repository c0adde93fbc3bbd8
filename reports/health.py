"""The health banner: can the day's numbers be trusted at all?

Every row of ``gold.experiment_health`` for the experiment and day (stats.health: ``check``,
``segment``, ``metric``, ``treatment_arm``, ``statistic``, ``p_value``, ``threshold``,
``passed``, ``is_gate``, ``detail``; only ``check`` and ``passed`` are required), and the
sample-ratio check from the results themselves (``srm_p_value`` and the ``srm`` flag of the
overall segment) unless the health table has an ``srm`` row. A failed gate turns the banner red
and the verdict invalid (reason ``gate_failed:<check>``); a failed check that is not a gate is a
warning. The banner names each check once (its worst row, how many rows) and spells out every
failing row; every row is listed, folded. Pure: frames in, strings out.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from reports.fmt import MISSING, is_missing
from reports.header import srm_verdict
from reports.metrics import metric_label
from stats.settings import AnalysisSettings

#: the sample-ratio threshold the results were flagged with (stats.settings)
SRM_ALPHA = float(AnalysisSettings.model_fields["srm_alpha"].default)
#: how the known checks (stats.health) are named on screen; others by their id, underscores as spaces
CHECK_NAMES = {
    "srm": "sample ratio (SRM)", "srm_platform": "sample ratio per platform", "crossover": "arm crossover",
    "pre_period_balance": "pre-period balance", "telemetry_completeness": "telemetry completeness",
    "aa_placebo": "A/A placebo", "canary_coverage": "canary coverage", "treatment_active": "treatment active",
}  # fmt: skip
_STATE_ORDER = {"failed": 0, "warning": 1, "unknown": 2, "ok": 3}


@dataclass(frozen=True)
class Check:
    """One row: a check of the whole experiment, or of one segment, metric or arm (``where``)."""

    name: str
    label: str
    passed: bool | None
    is_gate: bool
    detail: str
    where: str = ""

    @property
    def full_label(self) -> str:
        return f"{self.label} ({self.where})" if self.where else self.label

    @property
    def state(self) -> str:
        """ "ok", "failed" (a gate), "warning" (a failed check that is not a gate) or "unknown"."""
        if self.passed is None:
            return "unknown"
        return "ok" if self.passed else "failed" if self.is_gate else "warning"


@dataclass(frozen=True)
class Health:
    checks: list[Check]

    @property
    def failed_gates(self) -> list[Check]:
        return [c for c in self.checks if c.state == "failed"]

    @property
    def warnings(self) -> list[Check]:
        return [c for c in self.checks if c.state == "warning"]

    @property
    def ok(self) -> bool:
        return not self.failed_gates

    @property
    def state(self) -> str:
        return "failed" if self.failed_gates else "warning" if self.warnings else "ok"

    @property
    def summary(self) -> str:
        """One line: "every check passed" or the failing ones by name."""
        if self.failed_gates:
            return "failed: " + ", ".join(c.full_label for c in self.failed_gates)
        if self.warnings:
            return "gates passed; warnings: " + ", ".join(c.full_label for c in self.warnings)
        unknown = [c for c in self.checks if c.state == "unknown"]
        if unknown:
            names = ", ".join(dict.fromkeys(c.label for c in unknown))
            return f"every computable check passed ({names}: not computable yet)"
        return "every check passed" if self.checks else "no checks available"

    @property
    def groups(self) -> list[CheckGroup]:
        """Each check once: its worst row's state and how many rows it has, worst first."""
        by: dict[str, list[Check]] = {}
        for c in self.checks:
            by.setdefault(c.name, []).append(c)
        out = [CheckGroup(rows[0].name, rows[0].label, min((c.state for c in rows), key=_STATE_ORDER.get), rows)
               for rows in by.values()]  # fmt: skip
        return sorted(out, key=lambda g: _STATE_ORDER[g.state])


@dataclass(frozen=True)
class CheckGroup:
    name: str
    label: str
    state: str
    rows: list[Check]

    @property
    def detail(self) -> str:
        """The detail of a single row; "n rows" (n failing) for many."""
        if len(self.rows) == 1:
            return self.rows[0].detail
        bad = sum(c.state in ("failed", "warning") for c in self.rows)
        return f"{len(self.rows)} rows" + (f", {bad} failing" if bad else "")


def _p(p: float) -> str:
    return MISSING if is_missing(p) else f"{p:.1e}" if p < 0.001 else f"{p:.3f}"


def _label(name: str) -> str:
    return CHECK_NAMES.get(name, name.replace("_", " "))


def _text(value) -> str:
    return value if isinstance(value, str) else ""


def _where(row: pd.Series) -> str:
    """ "Windows", "p95 request latency", "fhol": what part of the experiment the row checks."""
    segment = _text(row.get("segment"))
    parts = [] if segment in ("", "overall") else [segment.partition("=")[2] or segment]
    if _text(row.get("metric")):
        parts.append(metric_label(row["metric"]))
    if _text(row.get("treatment_arm")):
        parts.append(row["treatment_arm"])
    return ", ".join(parts)


def _detail(row: pd.Series) -> str:
    parts = [_text(row.get("detail"))] if _text(row.get("detail")) else []
    if not is_missing(row.get("p_value")):
        parts.append(f"p = {_p(float(row['p_value']))}")
    elif not is_missing(row.get("statistic")):
        parts.append(f"statistic {float(row['statistic']):.3g}")
    if not is_missing(row.get("threshold")):
        parts.append(f"threshold {float(row['threshold']):g}")
    return ", ".join(parts)


def _bool(value) -> bool | None:
    return None if value is None or (isinstance(value, float) and value != value) else bool(value)


def _table_checks(rows: pd.DataFrame | None) -> list[Check]:
    if rows is None or rows.empty:
        return []
    name_col = "check" if "check" in rows.columns else "check_name" if "check_name" in rows.columns else None
    if name_col is None:
        return []
    out = []
    for _, r in rows.iterrows():
        name = str(r[name_col])
        gate = _bool(r.get("is_gate"))
        out.append(Check(name, _label(name), _bool(r.get("passed")), True if gate is None else gate, _detail(r),
                         _where(r)))  # fmt: skip
    return out


def srm_check(today: pd.DataFrame) -> Check | None:
    """The sample-ratio gate as the results carry it (None without overall results)."""
    if today.empty or not (today["segment_type"] == "overall").any():
        return None
    failed, p, _ = srm_verdict(today)
    known = not is_missing(p) or failed
    detail = f"χ² p = {_p(p)}; a mismatch below {SRM_ALPHA:g}" if known else "not computable"
    return Check("srm", _label("srm"), (not failed) if known else None, True, detail)


def health(today: pd.DataFrame, rows: pd.DataFrame | None = None) -> Health:
    """Every check of the health table's rows (``rows``: this experiment and day), and SRM from
    the results unless the table has it; failed gates first."""
    checks = _table_checks(rows)
    if not any(c.name == "srm" for c in checks):
        srm = srm_check(today)
        if srm is not None:
            checks.insert(0, srm)
    return Health(sorted(checks, key=lambda c: (_STATE_ORDER[c.state], not c.is_gate)))
