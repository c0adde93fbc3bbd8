"""The decision layer: an experiment's declared metrics in, one verdict per look out.

The rule is the risk-aware one of Schultzberg, Ankargren and Frånberg (2024), "Risk-aware
product decisions in A/B tests with multiple metrics" (arXiv 2402.11609):

- **ship** when at least one *success* metric is significantly better (one-sided superiority,
  each at alpha / S for S success metrics: a union-intersection test, §3.2) **and** every
  *guardrail* is significantly non-inferior within its margin (one-sided at alpha with no
  multiplicity correction: an intersection-union test, §3.1-3.3);
- **rollback** when a success metric is significantly worse than control, or a guardrail is
  significantly worse beyond its margin (the paper's deterioration tests, §4), each one-sided
  at alpha / (S + G) so that a treatment that moves nothing is rolled back with probability at
  most alpha;
- **invalid** when a quality gate fails (§4's quality tests: the results' sample-ratio test, and
  every gate of the health table, :mod:`stats.health`); **keep_running** otherwise, with the
  days still needed for the planned power; **no_ship** at or after the planned end when neither
  rule has been met.

With A treatment arms every level is divided by A as well (each arm is a separate ship/rollback
decision). Power (§3.4): the decision ships with probability 1 - beta only if the success test
*and* each of the G guardrails' tests pass, so each is planned at power 1 - beta / (G + 1)
(Bonferroni on the type II errors): :func:`plan_units`.

Every test is a one-sided test of a linear contrast of the two arms' estimates, so it needs
nothing but the results table (itself computed from sufficient statistics): for a relative
threshold r, D(r) = m_t - (1 + r) m_c with variance V_t + (1 + r)^2 V_c (the Fieller pivot); for
an absolute one a, D = m_t - m_c - a with V_t + V_c. The always-valid version compares
D / sqrt(V) with the normal-mixture boundary of :mod:`stats.sequential` at the one-sided level
calibrated to the experiment's planned size (``calibrated_alpha(level, sides=1)``), and a test
that has crossed at a look stays passed at every later look; the fixed-horizon version
compares it with the normal quantile at the planned end. Looks whose smaller arm has fewer
than ``sequential_min_events`` effective events do not count (their variances are not yet
variances). Segments never decide: only the ``overall`` rows are read.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as sps

from stats.health import failed_gates
from stats.sequential import boundary_multiplier, calibrated_alpha
from stats.settings import DecisionPlan, DecisionSettings, MetricRole

VERDICTS = ("ship", "rollback", "keep_running", "no_ship", "invalid")

#: one row per experiment x as_of_date x treatment arm: column -> type (Spark SQL names, so
#: the tables in the lake are declared from here)
DECISION_TYPES = {
    "experiment_id": "string", "as_of_date": "date", "control_arm": "string",
    "treatment_arm": "string", "verdict": "string", "reasons": "array<string>",
    "analysis": "string", "day_of_experiment": "int", "planned_days": "int",
    "days_to_planned_power": "double", "n_control": "bigint", "n_treatment": "bigint",
    "alpha": "double", "power": "double", "n_success": "int", "n_guardrails": "int",
    "success_alpha": "double", "guardrail_alpha": "double", "deterioration_alpha": "double",
    "guardrail_power": "double",
}  # fmt: skip
DECISION_COLUMNS = list(DECISION_TYPES)

#: one row per experiment x as_of_date x treatment arm x declared metric x test
TEST_TYPES = {
    "experiment_id": "string", "as_of_date": "date", "control_arm": "string",
    "treatment_arm": "string", "role": "string", "metric": "string", "quantile_p": "double",
    "test": "string", "better": "string", "threshold": "double", "threshold_scale": "string",
    "level": "double", "sequential": "boolean", "value_control": "double",
    "value_treatment": "double", "delta_abs": "double", "delta_rel": "double",
    "statistic": "double", "critical": "double", "bound": "double",
    "is_informative": "boolean", "passed_at_look": "boolean", "passed": "boolean",
}  # fmt: skip
TEST_COLUMNS = list(TEST_TYPES)

#: what each role tests: (test, threshold source, side relative to ``better``, level family)
_TESTS = {
    "success": (("superiority", "zero", +1, "success"), ("deterioration", "zero", -1, "det")),
    "guardrail": (
        ("non_inferiority", "margin", +1, "guardrail"),
        ("inferiority", "margin", -1, "det"),
    ),
    "mechanism": (("treatment_active", "zero", +1, "mechanism"),),
}


@dataclass(frozen=True)
class Decisions:
    """The verdicts and the tests behind them."""

    verdicts: pd.DataFrame
    tests: pd.DataFrame


def levels(n_success: int, n_guardrails: int, n_arms: int, alpha: float) -> dict[str, float]:
    """One-sided level of each test family (module docstring)."""
    a = alpha / max(n_arms, 1)
    return {
        "success": a / max(n_success, 1),
        "guardrail": a,
        "det": a / max(n_success + n_guardrails, 1),
        "mechanism": alpha,
    }


def contrast(
    value_control: np.ndarray,
    var_control: np.ndarray,
    value_treatment: np.ndarray,
    var_treatment: np.ndarray,
    threshold: np.ndarray,
    relative: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """D and Var(D) of the contrast a test is about (module docstring).

    Relative thresholds: D = m_t - (1 + r) m_c, V_t + (1 + r)^2 V_c; absolute: D = m_t - m_c - a,
    V_t + V_c.
    """
    k = np.where(relative, 1.0 + threshold, 1.0)
    d = value_treatment - k * value_control - np.where(relative, 0.0, threshold)
    return d, var_treatment + k * k * var_control


def relative_bound(
    value_control: np.ndarray,
    var_control: np.ndarray,
    value_treatment: np.ndarray,
    var_treatment: np.ndarray,
    critical: np.ndarray,
    side: np.ndarray,
) -> np.ndarray:
    """The one-sided relative bound at ``critical`` (Fieller's root on the tested side).

    side +1: the lower bound of m_t / m_c - 1 (a test of "the lift is above r" passes exactly
    when this bound is above r); -1: the upper bound. NaN where Fieller's set is unbounded.
    """
    mc, mt = value_control, value_treatment
    z2 = critical * critical
    a = mc * mc - z2 * var_control
    disc = mc * mc * var_treatment + mt * mt * var_control - z2 * var_control * var_treatment
    with np.errstate(invalid="ignore", divide="ignore"):
        root = critical * np.sqrt(disc)
        lo, hi = (mt * mc - root) / a - 1.0, (mt * mc + root) / a - 1.0
    ok = (a > 0) & (disc >= 0) & (mc > 0)
    return np.where(ok, np.where(side > 0, lo, hi), np.nan)


_LOOK = ["experiment_id", "segment_value", "as_of_date", "treatment_arm"]
"""A look of one comparison: the overall segment's value is 'all' in the pipeline; a
simulation study puts its experiments there."""


def label(role: MetricRole) -> str:
    """How reasons and plans name a declared metric: ``metric`` or ``metric@p95``."""
    q = role.quantile
    return role.metric if q is None else f"{role.metric}@p{float(q) * 100:g}"


def row_labels(metric: pd.Series, quantile: pd.Series) -> pd.Series:
    """:func:`label` of every results row (``metric`` or ``metric@p95``)."""
    q = quantile.astype(float)
    with_q = metric + "@p" + (q * 100).map(lambda v: f"{v:g}" if np.isfinite(v) else "")
    return metric.where(q.isna(), with_q)


def _test_rows(plans: dict[str, DecisionPlan], overall: pd.DataFrame) -> pd.DataFrame:
    """One row per result row x declared test, with its threshold and side."""
    specs = []
    for eid, plan in plans.items():
        for role in plan.roles:
            for test, source, side, family in _TESTS[role.role]:
                threshold, scale = _threshold(role, source)
                specs.append({
                    "experiment_id": eid, "label": label(role), "role": role.role, "test": test,
                    "test_family": family, "better": role.better,
                    "side": side if role.better == "increase" else -side,
                    "threshold": threshold, "threshold_scale": scale,
                    "minimum_effect": role.minimum_effect,
                })  # fmt: skip
    if not specs:
        return pd.DataFrame()
    rows = overall.assign(label=row_labels(overall["metric"], overall["quantile_p"]))
    return pd.DataFrame(specs).merge(rows, on=["experiment_id", "label"], how="inner")


def _threshold(role: MetricRole, source: str) -> tuple[float, str]:
    """The tested threshold's size (its sign is set by the test) and its scale."""
    if source == "zero":
        return 0.0, "absolute" if role.role == "mechanism" else "relative"
    if role.margin_absolute is not None:
        return role.margin_absolute, "absolute"
    return (role.margin if role.margin is not None else float("nan")), "relative"


def _evaluate(tests: pd.DataFrame, s: DecisionSettings) -> pd.DataFrame:
    """Statistic, critical value, bound and pass of every test row at its look."""
    t = tests
    better_sign = np.where(t["better"].to_numpy(object) == "increase", 1.0, -1.0)
    # a margin is a tolerated move in the worse direction: signed threshold on the lift
    margin_test = t["test"].isin(["non_inferiority", "inferiority"]).to_numpy()
    thr = np.where(margin_test, -better_sign, 1.0) * t["threshold"].to_numpy(float) + 0.0
    relative = t["threshold_scale"].to_numpy(object) == "relative"
    mc, mt = t["value_control"].to_numpy(float), t["value_treatment"].to_numpy(float)
    vc = t["se_control"].to_numpy(float) ** 2
    vt = t["se_treatment"].to_numpy(float) ** 2
    d, v = contrast(mc, vc, mt, vt, thr, relative)
    side = t["side"].to_numpy(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        z = side * d / np.sqrt(v)
    level = t["level"].to_numpy(float)
    sequential = t["sequential"].to_numpy(bool)
    n_total = (t["n_control"] + t["n_treatment"]).to_numpy(float)
    calibrated = t["sequential_calibrated"].fillna(False).to_numpy(bool)
    seq_level = level.copy()
    for a in np.unique(level[calibrated]):
        seq_level[calibrated & (level == a)] = calibrated_alpha(float(a), sides=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        crit = np.where(
            sequential,
            boundary_multiplier(n_total, seq_level, t["sequential_tuning_n"].to_numpy(float)),
            sps.norm.isf(level),
        )
    # a mechanism metric may be 0 by construction in control (HoL-blocked time without
    # forced HoL blocking): its test needs only a contrast with some variance
    units = np.minimum(t["n_control"], t["n_treatment"]).to_numpy(float)
    enough = t["effective_events"].to_numpy(float) >= s.sequential_min_events
    mechanism = t["role"].to_numpy(object) == "mechanism"
    informative = (enough | mechanism) & (units >= s.sequential_min_units) & (v > 0)
    out = t.assign(threshold=thr, statistic=z, critical=crit, is_informative=informative,
                   passed_at_look=informative & np.isfinite(z) & (z >= crit))  # fmt: skip
    with np.errstate(invalid="ignore", divide="ignore"):
        abs_bound = (mt - mc) - side * crit * np.sqrt(vt + vc)
    out["bound"] = np.where(relative, relative_bound(mc, vc, mt, vt, crit, side), abs_bound)
    out["delta_abs"] = mt - mc
    with np.errstate(invalid="ignore", divide="ignore"):
        out["delta_rel"] = mt / mc - 1.0
    return out


def decide(results: pd.DataFrame, settings: DecisionSettings,
           health: pd.DataFrame | None = None) -> Decisions:  # fmt: skip
    """Verdicts for every experiment x as_of_date x treatment arm of ``results``.

    Args:
        results: the output of :func:`stats.engine.analyze` (the columns of
            :data:`stats.schema.OUTPUT_COLUMNS`), for every look of the experiments to decide
            (a sequential test that passed at an earlier look stays passed, so pass the
            experiment's history, not just today).
        settings: the declared metrics of each experiment and the levels.
        health: the health checks (:data:`stats.health.HEALTH_COLUMNS`; ``experiment_id``,
            ``as_of_date``, ``check``, ``passed`` and ``is_gate`` are read): a failed gate of an
            experiment's date makes every verdict of that look ``invalid``, with the reason
            ``gate_failed:<check>``. None: the results' sample-ratio test is the only gate.

    Returns:
        :class:`Decisions`: ``verdicts`` (:data:`DECISION_COLUMNS`) and ``tests``
        (:data:`TEST_COLUMNS`).
    """
    s = settings
    overall = results[(results["segment_type"] == "overall")
                      & results["experiment_id"].isin(list(s.experiments))].copy()  # fmt: skip
    if overall.empty:
        return Decisions(pd.DataFrame(columns=DECISION_COLUMNS),
                         pd.DataFrame(columns=TEST_COLUMNS))  # fmt: skip
    overall["as_of_date"] = pd.to_datetime(overall["as_of_date"]).dt.normalize()
    arms = overall.groupby("experiment_id")["treatment_arm"].nunique()
    tests = _test_rows(s.experiments, overall)
    if not tests.empty:
        tests = _evaluate(_with_levels(tests, s, arms), s)
        key = [*_LOOK[:2], "treatment_arm", "label", "test"]
        tests = tests.sort_values([*key, "as_of_date"], kind="stable")
        seq = tests["sequential"].to_numpy(bool)
        ever = tests.groupby(key, sort=False)["passed_at_look"].cummax().astype(bool)
        tests["passed"] = np.where(seq, ever, tests["passed_at_look"])
        # a sequential test's bound is the running one (the intersection of the looks so far):
        # it is beyond the threshold exactly when the test has passed at some look
        side = tests["side"].to_numpy(float)
        signed = pd.Series(np.where(tests["is_informative"], side * tests["bound"], np.nan),
                           index=tests.index)  # fmt: skip
        groups = [tests[k] for k in key]
        running = signed.groupby(groups, sort=False).cummax().groupby(groups, sort=False).ffill()
        running = side * running.to_numpy()
        tests["bound"] = np.where(seq, running, tests["bound"])
    looks = overall.drop_duplicates(_LOOK)
    failed = failed_gates(health)
    frames = [_verdicts(looks[looks["experiment_id"] == e], tests, plan, s, int(arms.get(e, 1)),
                        failed[failed["experiment_id"] == e])
              for e, plan in s.experiments.items() if (looks["experiment_id"] == e).any()]  # fmt: skip
    verdicts = pd.concat(frames, ignore_index=True)
    keep = [c for c in (*DECISION_COLUMNS, "segment_value") if c in verdicts.columns]
    tests = tests.reindex(columns=[*TEST_COLUMNS, "segment_value", "label"])
    if len(tests):
        tests["as_of_date"] = pd.to_datetime(tests["as_of_date"]).dt.date
    return Decisions(verdicts[keep].reset_index(drop=True), tests.reset_index(drop=True))


def _with_levels(tests: pd.DataFrame, s: DecisionSettings, arms: pd.Series) -> pd.DataFrame:
    """Each test row's one-sided level, and whether it is the sequential or fixed version."""
    level = np.full(len(tests), np.nan)
    sequential = np.ones(len(tests), bool)
    eid = tests["experiment_id"].to_numpy(object)
    for e in np.unique(eid):
        plan = s.experiments[e]
        m = eid == e
        n_s = sum(r.role == "success" for r in plan.roles)
        n_g = sum(r.role == "guardrail" for r in plan.roles)
        lv = levels(n_s, n_g, int(arms.get(e, 1)), s.alpha)
        level[m] = tests.loc[m, "test_family"].map(lv).to_numpy(float)
        if plan.analysis == "fixed_horizon":
            sequential[m] = tests.loc[m, "test"].isin(["deterioration", "inferiority"]).to_numpy()
    return tests.assign(level=level, sequential=sequential)


def _verdicts(looks: pd.DataFrame, tests: pd.DataFrame, plan: DecisionPlan,
              s: DecisionSettings, n_arms: int, failed: pd.DataFrame) -> pd.DataFrame:  # fmt: skip
    """The verdict of every look of one experiment, its reasons and the inputs it used
    (``failed``: the experiment's failed health gates, :func:`stats.health.failed_gates`)."""
    success = [label(r) for r in plan.roles if r.role == "success"]
    guardrails = [label(r) for r in plan.roles if r.role == "guardrail"]
    mechanism = [label(r) for r in plan.roles if r.role == "mechanism"]
    lv = levels(len(success), len(guardrails), n_arms, s.alpha)
    out = looks[[*_LOOK, "control_arm", "n_control", "n_treatment", "srm_p_value"]].copy()
    out = out.reset_index(drop=True)
    day = (out["as_of_date"] - pd.Timestamp(plan.start_date)).dt.days.to_numpy() + 1
    at_end = np.full(len(out), False) if plan.planned_days is None else day >= plan.planned_days
    t = tests[tests["experiment_id"] == out["experiment_id"].iloc[0]] if len(tests) else tests
    wide = (t.pivot_table(index=_LOOK, columns=["label", "test"], values="passed", aggfunc="max")
            if len(t) else pd.DataFrame())  # fmt: skip
    key = pd.MultiIndex.from_frame(out[_LOOK])

    def passed(name: str, test: str) -> np.ndarray:
        if (name, test) not in wide.columns:
            return np.zeros(len(out), bool)
        return wide[(name, test)].reindex(key).fillna(False).to_numpy(bool)

    present = {n: np.zeros(len(out), bool) for n in (*success, *guardrails, *mechanism)}
    if len(t):
        seen = t.drop_duplicates([*_LOOK, "label"]).set_index(_LOOK)["label"]
        for n in present:
            rows = seen[seen == n].index
            present[n] = key.isin(rows)
    decides_now = np.full(len(out), plan.analysis == "sequential") | at_end
    better = {n: passed(n, "superiority") & decides_now for n in success}
    worse = {n: passed(n, "deterioration") for n in success}
    ni = {n: passed(n, "non_inferiority") & decides_now for n in guardrails}
    inferior = {n: passed(n, "inferiority") for n in guardrails}
    active = {n: passed(n, "treatment_active") for n in mechanism}
    missing = np.zeros(len(out), bool)
    for n in present.values():
        missing |= ~n
    srm = out["srm_p_value"].to_numpy(float)
    gates = [["srm"] if np.isfinite(p) and p < s.srm_alpha else [] for p in srm]
    by_day = failed.groupby("as_of_date")["check"].agg(list) if len(failed) else {}
    for i, look_date in enumerate(out["as_of_date"]):
        gates[i] += [c for c in sorted(by_day.get(look_date, ())) if c not in gates[i]]
    gate = np.array([bool(g) for g in gates], bool)
    any_worse = _any(worse, len(out)) | _any(inferior, len(out))
    ship = _any(better, len(out)) & _all(ni, len(out)) & ~missing & bool(success)
    verdict = np.select([gate, any_worse, ship, at_end], ["invalid", "rollback", "ship", "no_ship"],
                        "keep_running")  # fmt: skip
    out["verdict"] = verdict
    out["reasons"] = _reasons(verdict, better, worse, ni, inferior, active, present, gates)
    out["day_of_experiment"] = day
    out["planned_days"] = plan.planned_days
    out["analysis"] = plan.analysis
    out["days_to_planned_power"] = np.where(
        verdict == "keep_running", _days_to_power(t, out, plan, s, lv), np.nan
    )
    out["alpha"], out["power"] = s.alpha, s.power
    out["n_success"], out["n_guardrails"] = len(success), len(guardrails)
    out["success_alpha"], out["guardrail_alpha"] = lv["success"], lv["guardrail"]
    out["deterioration_alpha"] = lv["det"]
    out["guardrail_power"] = planned_test_power(s.power, len(guardrails))
    out["as_of_date"] = out["as_of_date"].dt.date
    return out


def _any(flags: dict[str, np.ndarray], n: int) -> np.ndarray:
    out = np.zeros(n, bool)
    for f in flags.values():
        out |= f
    return out


def _all(flags: dict[str, np.ndarray], n: int) -> np.ndarray:
    out = np.ones(n, bool)
    for f in flags.values():
        out &= f
    return out


def _reasons(verdict, better, worse, ni, inferior, active, present, gates) -> list[list[str]]:
    """Machine-readable reasons per look, ``code:metric`` (most important first; ``gates``: the
    failed gates of each look, ``gate_failed:<check>``)."""
    n = len(verdict)
    out: list[list[str]] = [[] for _ in range(n)]

    def add(code: str, flags: dict[str, np.ndarray], when: np.ndarray) -> None:
        for name, f in flags.items():
            for i in np.flatnonzero(f & when):
                out[i].append(f"{code}:{name}")

    yes = np.ones(n, bool)
    for i, failed in enumerate(gates):
        out[i] += [f"gate_failed:{check}" for check in failed]
    add("success_worse", worse, yes)
    add("guardrail_inferior", inferior, yes)
    add("success_better", better, yes)
    undecided = (verdict == "keep_running") | (verdict == "no_ship")
    add("success_not_shown", {k: ~v for k, v in better.items()}, undecided & ~_any(better, n))
    add("guardrail_noninferior", ni, yes)
    add("guardrail_not_shown_noninferior", {k: ~v for k, v in ni.items()}, undecided)
    add("metric_missing", {k: ~v for k, v in present.items()}, yes)
    add("treatment_active", {k: v & present[k] for k, v in active.items()}, yes)
    add("treatment_not_shown_active", {k: ~v & present[k] for k, v in active.items()}, yes)
    return out


def planned_test_power(power: float, n_guardrails: int) -> float:
    """Power each test is planned at so that the decision ships with ``power`` (§3.4)."""
    return 1.0 - (1.0 - power) / (n_guardrails + 1)


@functools.lru_cache(maxsize=256)
def required_noncentrality(level: float, test_power: float, looks: int | None) -> float:
    """Noncentrality (true contrast / its standard error at the planned size) a one-sided
    test at ``level`` needs for ``test_power``: z_{1-level} + z_{power} for the fixed-horizon
    test, :func:`stats.power.sequential_noncentrality` (one-sided) for the always-valid one."""
    if looks is None:
        return float(sps.norm.isf(level) + sps.norm.ppf(test_power))
    from stats.power import sequential_noncentrality

    return sequential_noncentrality(test_power, looks, level, sides=1)


def _days_to_power(t: pd.DataFrame, out: pd.DataFrame, plan: DecisionPlan,
                   s: DecisionSettings, lv: dict) -> np.ndarray:  # fmt: skip
    """Days still needed for the planned power, from today's variance and traffic.

    Each test needs N = N_now (theta* / theta_now)^2 units, theta_now being the contrast's
    expected value under the planning alternative over today's standard error (success: the
    minimum effect; guardrail: no change, a margin away from its threshold) and theta* from
    :func:`required_noncentrality`. Units are assumed to keep arriving at today's average rate
    (units / days so far), so days scale like units. Ship needs one success test and every
    guardrail: the least of the success metrics' days, the most of the guardrails'.
    """
    n = len(out)
    guardrails = sum(r.role == "guardrail" for r in plan.roles)
    tp = planned_test_power(s.power, guardrails)
    looks = (plan.planned_days or 30) if plan.analysis == "sequential" else None
    key = pd.MultiIndex.from_frame(out[_LOOK])
    succ, guard = np.full(n, np.inf), np.zeros(n)
    for role in plan.roles:
        if role.role == "mechanism":
            continue
        test = "superiority" if role.role == "success" else "non_inferiority"
        rows = t[(t["label"] == label(role)) & (t["test"] == test)]
        rows = rows.set_index(_LOOK).reindex(key)
        mc = rows["value_control"].abs().to_numpy(float)
        vc = rows["se_control"].to_numpy(float) ** 2
        vt = rows["se_treatment"].to_numpy(float) ** 2
        if role.role == "success":
            size, k = (role.minimum_effect or np.nan) * mc, 1.0
        elif role.margin_absolute is not None:
            size, k = np.full(n, role.margin_absolute), 1.0
        else:
            size, k = (role.margin or np.nan) * mc, 1.0 + rows["threshold"].to_numpy(float)
        theta = required_noncentrality(lv["success" if role.role == "success" else "guardrail"],
                                       tp, looks)  # fmt: skip
        days = (out["as_of_date"] - pd.Timestamp(plan.start_date)).dt.days.to_numpy() + 1.0
        with np.errstate(invalid="ignore", divide="ignore"):
            theta_now = size / np.sqrt(vt + k * k * vc)
            remaining = np.maximum(0.0, np.ceil(days * (theta / theta_now) ** 2 - days))
        remaining = np.where(theta_now > 0, remaining, np.nan)
        if role.role == "success":
            succ = np.fmin(succ, np.where(np.isnan(remaining), np.inf, remaining))
        else:
            guard = np.maximum(guard, remaining)  # NaN (unknown) propagates
    succ = np.where(np.isinf(succ), np.nan, succ)
    return np.maximum(succ, guard)


def plan_units(
    roles: tuple[MetricRole, ...],
    unit_variance: dict[str, float],
    control_mean: dict[str, float],
    alpha: float = 0.05,
    power: float = 0.8,
    looks: int | None = 30,
    n_arms: int = 2,
) -> pd.DataFrame:
    """Units per arm each declared test needs under the rule (module docstring).

    Args:
        roles: the experiment's declared metrics.
        unit_variance: per declared metric label (:func:`label`), the per-unit variance of the
            arm estimate (Var(estimate) x units; e.g. se_control^2 x n_control of a recent
            look), assumed equal in both arms.
        control_mean: per label, the metric's control value.
        alpha, power: the decision's levels.
        looks: planned daily looks of the always-valid tests (None: one fixed-horizon look).
        n_arms: arms including control.

    Returns:
        One row per success metric and guardrail: role, metric, the test's level and power,
        the tested effect (relative or absolute) and the units per arm it needs; the
        experiment's requirement is the least of the success rows and the most of the
        guardrail rows (:func:`required_units`).
    """
    success = [r for r in roles if r.role == "success"]
    guardrails = [r for r in roles if r.role == "guardrail"]
    lv = levels(len(success), len(guardrails), n_arms - 1, alpha)
    tp = planned_test_power(power, len(guardrails))
    rows = []
    for r in (*success, *guardrails):
        key = label(r)
        var, mean = unit_variance.get(key, np.nan), abs(control_mean.get(key, np.nan))
        level = lv["success" if r.role == "success" else "guardrail"]
        theta = required_noncentrality(level, tp, looks)
        if r.role == "success":
            effect, scale, factor = r.minimum_effect or np.nan, "relative", 2.0
            absolute = effect * mean
        elif r.margin_absolute is not None:
            effect, scale, factor, absolute = r.margin_absolute, "absolute", 2.0, r.margin_absolute
        else:
            # the contrast m_t - (1 + r) m_c at the margin r = +-margin (worse direction)
            effect, scale = r.margin or np.nan, "relative"
            k = 1.0 + effect if r.better == "decrease" else 1.0 - effect
            factor, absolute = 1.0 + k * k, effect * mean
        with np.errstate(invalid="ignore", divide="ignore"):
            units = factor * var * (theta / absolute) ** 2
        rows.append({"role": r.role, "metric": key, "level": level, "test_power": tp,
                     "effect": effect, "effect_scale": scale, "units_per_arm": float(np.ceil(units))
                     if np.isfinite(units) else np.nan})  # fmt: skip
    return pd.DataFrame(rows)


def required_units(plan: pd.DataFrame) -> float:
    """Units per arm the whole rule needs: min over success rows, max over guardrail rows."""
    succ = plan.loc[plan["role"] == "success", "units_per_arm"]
    guard = plan.loc[plan["role"] == "guardrail", "units_per_arm"]
    parts = [succ.min(), *guard.tolist()] if len(succ) else guard.tolist()
    return float(np.max(parts)) if parts and not np.any(pd.isna(parts)) else np.nan
