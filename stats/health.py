"""Health checks: can an experiment's numbers be trusted at all? (docs/stats.md, "Health checks")

One row per experiment x as-of date x check (x segment, metric or estimator where the check has
several), with its statistic, p-value (or rate), threshold, pass/fail and whether it is a gate:
a failed gate makes the day's verdict ``invalid`` (:func:`stats.decision.decide`, reason
``gate_failed:<check>``); a failed check that is not a gate is a warning. Every function here is
pure: counts and sums in (the warehouse's ``gold.experiment_health_counts``,
``gold.experiment_sufficient_stats`` and ``gold.experiment_placebo_sufficient_stats``), rows out.

Checks:

- ``srm``, ``srm_platform``: sample ratio mismatch of the *assigned* units (every unit seen with
  the assignment, not one metric's units), overall and per platform with Bonferroni over the
  platforms (Fabijan et al. 2019, "Diagnosing Sample Ratio Mismatch in Online Controlled
  Experiments", KDD; the chi-square of :mod:`stats.srm`). Gates.
- ``crossover``: the share of units seen in more than one arm of the experiment. Gate above
  ``crossover_max_share``.
- ``pre_period_balance``: the CUPED covariates' pre-period means compared across arms (Wald
  chi-square; the standardised mean difference reported). Gate for the declared success and
  guardrail metrics, Bonferroni over them.
- ``telemetry_completeness``: the share of assigned units with at least one observation of each
  metric, per arm, and a chi-square test that it differs between arms (differential
  missingness); observations per unit reported. Gate for the declared success and guardrail
  metrics, Bonferroni over them.
- ``treatment_active``: the decision's one-sided test that each mechanism metric moved the
  expected way (read from the decision's tests); a warning, never a gate.
- ``aa_placebo``: the running share of significant placebo comparisons (the control arm re-split
  K times) per estimator, against alpha; ``canary_coverage``: the running coverage of a known
  multiplicative effect per estimator, against 1 - alpha. Both are binomial tests whose variance
  is widened by the design effect of clustered binary data (Rao and Scott 1992, "A simple method
  for the analysis of clustered binary data", Biometrics 48(2), §2-3): the comparisons of one
  split (or one day) are correlated through their metrics, the splits are independent. Warnings.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field
from scipy import stats as sps

from stats.settings import DecisionPlan
from stats.srm import srm_p_value
from stats.statistics import MeanStatistic, RatioStatistic

#: gold.experiment_health: column -> Spark SQL type (the table is declared from here)
HEALTH_TYPES = {
    "experiment_id": "string", "as_of_date": "date", "check": "string", "segment": "string",
    "metric": "string", "estimator": "string", "treatment_arm": "string",
    "statistic": "double", "p_value": "double", "threshold": "double", "passed": "boolean",
    "is_gate": "boolean", "detail": "string",
}  # fmt: skip
HEALTH_COLUMNS = list(HEALTH_TYPES)

#: gold.experiment_placebo_tally: the placebo comparisons of one day, per estimator and split
TALLY_TYPES = {
    "experiment_id": "string", "as_of_date": "date", "kind": "string", "estimator": "string",
    "placebo_split": "int", "comparisons": "bigint", "hits": "bigint",
}  # fmt: skip
TALLY_COLUMNS = list(TALLY_TYPES)

#: the checks whose failure invalidates a verdict (when their row says ``is_gate``)
GATES = ("srm", "srm_platform", "crossover", "pre_period_balance", "telemetry_completeness")

PLACEBO_SEGMENT = "placebo"
CANARY_ARM = "b_canary"


class HealthSettings(BaseModel):
    """The thresholds of the checks (docs/stats.md, "Health checks", says why each).

    Attributes:
        srm_alpha: the overall sample-ratio test's threshold.
        srm_platform_alpha: family-wise threshold of the per-platform tests (each is tested at
            this / the number of platforms).
        crossover_max_share: the largest share of units seen in more than one arm that passes.
        balance_alpha: family-wise threshold of the pre-period balance tests of the gated
            metrics (Bonferroni); a metric that is not gated is tested (as a warning) at it.
        completeness_alpha: the same for the differential-missingness tests.
        placebo_alpha: the level of each placebo comparison (the engine's alpha): the expected
            share of significant A/A comparisons, and 1 - the expected canary coverage.
        placebo_check_alpha: threshold of the tests that a running tally is off its band.
        min_clusters: with fewer independent clusters the design effect is not estimated but
            taken at its largest (every cluster one trial).
        balance_min_units: a metric's balance is tested when each arm has at least this many
            effective units with a pre-period value (Kish's (sum c)^2 / sum c^2): a covariate
            only a few units have is no covariate (no row).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    srm_alpha: float = Field(0.001, gt=0.0, lt=1.0)
    srm_platform_alpha: float = Field(0.001, gt=0.0, lt=1.0)
    crossover_max_share: float = Field(0.01, ge=0.0, lt=1.0)
    balance_alpha: float = Field(0.001, gt=0.0, lt=1.0)
    completeness_alpha: float = Field(0.001, gt=0.0, lt=1.0)
    placebo_alpha: float = Field(0.05, gt=0.0, lt=0.5)
    placebo_check_alpha: float = Field(0.001, gt=0.0, lt=1.0)
    min_clusters: int = Field(5, ge=2)
    balance_min_units: float = Field(10.0, ge=2.0)


def empty() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=object) for c in HEALTH_COLUMNS})


def _rows(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every health column (absent ones null), in order."""
    return frame.reindex(columns=HEALTH_COLUMNS).reset_index(drop=True)


def _day(values: pd.Series) -> pd.Series:
    return pd.to_datetime(values).dt.normalize()


def gated_metrics(plans: dict[str, DecisionPlan]) -> dict[str, set[str]]:
    """Per experiment, the metrics whose balance and completeness are gates: its declared
    success metrics and guardrails (a quantile metric by its name: its units are the same at
    every quantile)."""
    return {e: {r.metric for r in p.roles if r.role in ("success", "guardrail")}
            for e, p in plans.items()}  # fmt: skip


# --- sample ratio -------------------------------------------------------------------------


def srm_checks(units: pd.DataFrame, expected_split: dict[str, dict[str, float]],
               s: HealthSettings) -> pd.DataFrame:  # fmt: skip
    """``srm`` (overall) and ``srm_platform`` (each platform) rows.

    ``statistic`` is the relative shortfall of the arm furthest below its expected count
    (observed / expected - 1).

    Args:
        units: assigned units per experiment x as_of_date x segment_type (``overall``,
            ``platform``) x segment_value x arm (column ``units``).
        expected_split: experiment -> arm -> weight (the registry's); an experiment not listed
            is expected to split equally over the arms seen.
    """
    if units.empty:
        return empty()
    u = units.assign(as_of_date=_day(units["as_of_date"]))
    key = ["experiment_id", "as_of_date", "segment_type", "segment_value"]
    counts = u.pivot_table(index=key, columns="arm", values="units", aggfunc="sum")
    arms = list(counts.columns)
    eids = counts.index.get_level_values("experiment_id").to_numpy(object)
    seen = u.groupby("experiment_id")["arm"].agg(set)
    weights = np.full(counts.shape, np.nan)
    for e in np.unique(eids):
        split = expected_split.get(e) or dict.fromkeys(seen.get(e, ()), 1.0)
        weights[eids == e] = [split.get(a, np.nan) for a in arms]
    # an arm the experiment has but no unit of (in this segment) counts 0: the worst mismatch
    obs = np.where(np.isfinite(weights), counts.fillna(0.0).to_numpy(float), np.nan)
    p = srm_p_value(obs, weights)
    with np.errstate(invalid="ignore", divide="ignore"):
        w = np.where(np.isfinite(weights), weights, 0.0)
        expected = np.nansum(obs, axis=1, keepdims=True) * w / w.sum(axis=1, keepdims=True)
        deviation = np.where(expected > 0, obs / expected - 1.0, np.nan)
    out = counts.index.to_frame(index=False)
    # the arm furthest below its expected count: a mismatch is units lost somewhere
    out["statistic"] = np.min(np.where(np.isfinite(deviation), deviation, np.inf), axis=1)
    out["p_value"] = p
    out["detail"] = [_split_text(o, w_, arms) for o, w_ in zip(obs, weights, strict=True)]
    overall = out["segment_type"] == "overall"
    platforms = out[~overall].groupby(["experiment_id", "as_of_date"])["segment_value"]
    n_platforms = platforms.transform("count")
    out["threshold"] = np.where(overall, s.srm_alpha, s.srm_platform_alpha / n_platforms.reindex(
        out.index).fillna(1.0))  # fmt: skip
    out["check"] = np.where(overall, "srm", "srm_platform")
    out["segment"] = np.where(overall, "overall", "platform=" + out["segment_value"].astype(str))
    out["passed"] = _passed(out["p_value"], out["threshold"])
    out["is_gate"] = True
    return _rows(out)


def _split_text(obs: np.ndarray, weights: np.ndarray, arms: list) -> str:
    parts = [
        f"{a} {int(o):,}" for a, o, w in zip(arms, obs, weights, strict=True) if np.isfinite(w)
    ]
    w = np.where(np.isfinite(weights), weights, 0.0)
    shares = "/".join(f"{100 * x / w.sum():g}" for x in w if x > 0)
    return f"assigned units {', '.join(parts)} (expected {shares})"


def _passed(p: pd.Series | np.ndarray, threshold: pd.Series | np.ndarray) -> pd.Series:
    """p >= threshold; null where the test could not be computed."""
    p = np.asarray(p, float)
    return pd.Series(
        np.where(np.isfinite(p), p >= np.asarray(threshold, float), None), dtype=object
    )


# --- crossover ----------------------------------------------------------------------------


def crossover_checks(units: pd.DataFrame, s: HealthSettings) -> pd.DataFrame:
    """``crossover`` rows: the share of the experiment's units seen in more than one arm.

    Args:
        units: the overall rows of the health counts, with ``experiment_units`` (distinct units
            of the experiment) and ``experiment_crossover_units`` (those in more than one arm).
    """
    u = units[units["segment_type"] == "overall"]
    if u.empty:
        return empty()
    out = (u.assign(as_of_date=_day(u["as_of_date"]))
           .groupby(["experiment_id", "as_of_date"], as_index=False)
           [["experiment_units", "experiment_crossover_units"]].max())  # fmt: skip
    total = out["experiment_units"].to_numpy(float)
    crossed = out["experiment_crossover_units"].to_numpy(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        out["statistic"] = np.where(total > 0, crossed / total, np.nan)
    out["threshold"] = s.crossover_max_share
    out["passed"] = pd.Series(np.where(np.isfinite(out["statistic"]),
                                       out["statistic"] <= s.crossover_max_share, None), dtype=object)  # fmt: skip
    out["detail"] = [f"{int(c):,} of {int(t):,} units seen in more than one arm"
                     for c, t in zip(crossed, total, strict=True)]  # fmt: skip
    out["check"], out["segment"], out["is_gate"] = "crossover", "overall", True
    return _rows(out)


# --- pre-period balance -------------------------------------------------------------------


def _covariate(rows: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Per arm row: the covariate's estimate (mean of c, or the ratio sum_c / sum_d) and the
    variance of its per-unit influence values (the metric's own linearisation)."""
    n = rows["n_units"].to_numpy(float)
    col = lambda c: rows[c].to_numpy(float) if c in rows else np.full(len(rows), np.nan)  # noqa: E731
    ratio = (rows["metric_kind"] == "ratio").to_numpy()
    mean = MeanStatistic(n, col("sum_c"), col("sum_c2"))
    rat = RatioStatistic(n, col("sum_c"), col("sum_c2"), col("sum_d"), col("sum_d2"), col("sum_cd"))
    with np.errstate(invalid="ignore", divide="ignore"):
        est = np.where(ratio, rat.estimate(), mean.estimate())
        var = np.where(ratio, rat.unit_variance(), mean.unit_variance())
    return est, var


def balance_checks(stats: pd.DataFrame, gated: dict[str, set[str]],
                   s: HealthSettings) -> pd.DataFrame:  # fmt: skip
    """``pre_period_balance`` rows, one per experiment x date x metric with a CUPED covariate.

    The arms' covariate estimates m_a with variances V_a = s_a^2 / n_a are compared by the Wald
    statistic sum_a (m_a - m_w)^2 / V_a, m_w the inverse-variance weighted mean, chi-square with
    arms - 1 df (for two arms the square of the Welch z). ``statistic`` is the standardised mean
    difference (m_t - m_c) / sqrt((s_t^2 + s_c^2) / 2) of the treatment arm farthest from control.
    Metrics whose covariate is missing in an arm, constant, or held by fewer than
    ``balance_min_units`` effective units of an arm have no row.
    """
    rows = stats[(stats["segment_type"] == "overall") & stats["metric_kind"].isin(
        ["mean", "proportion", "ratio"]) & stats["sum_c"].notna()].copy()  # fmt: skip
    if rows.empty:
        return empty()
    rows["as_of_date"] = _day(rows["as_of_date"])
    rows["m"], rows["s2"] = _covariate(rows)
    with np.errstate(invalid="ignore", divide="ignore"):
        rows["v"] = rows["s2"] / rows["n_units"]
        rows["w"] = np.where(rows["v"] > 0, 1.0 / rows["v"], np.nan)
    key = ["experiment_id", "as_of_date", "metric"]
    g = rows.groupby(key)
    mw = (rows["w"] * rows["m"]).groupby([rows[k] for k in key]).transform("sum") / g[
        "w"
    ].transform("sum")
    rows["term"] = rows["w"] * (rows["m"] - mw) ** 2
    with np.errstate(invalid="ignore", divide="ignore"):
        rows["kish"] = rows["sum_c"] ** 2 / rows["sum_c2"]
    out = g.agg(chi2=("term", lambda t: t.sum(min_count=1)), arms=("arm", "count"),
                bad=("w", lambda w: (~np.isfinite(w)).any()),
                kish=("kish", "min")).reset_index()  # fmt: skip
    out["p_value"] = np.where(out["bad"] | (out["arms"] < 2), np.nan,
                              sps.chi2.sf(out["chi2"], np.maximum(out["arms"] - 1, 1)))  # fmt: skip
    control = rows[rows["is_control"].astype(bool)].set_index(key)
    treated = rows[~rows["is_control"].astype(bool)].join(
        control[["m", "s2"]], on=key, rsuffix="_c"
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        treated["smd"] = (treated["m"] - treated["m_c"]) / np.sqrt(
            (treated["s2"] + treated["s2_c"]) / 2
        )
    if len(treated):
        order = treated["smd"].abs().fillna(-1.0)
        worst = treated.loc[order.groupby([treated[k] for k in key]).idxmax()]
        out = out.merge(worst[[*key, "smd", "arm", "m", "m_c"]], on=key, how="left")
    else:
        out = out.assign(smd=np.nan, arm=None, m=np.nan, m_c=np.nan)
    out["statistic"] = out["smd"]
    out["treatment_arm"] = out["arm"]
    out["detail"] = [f"pre-period {_g(c)} (control) vs {_g(t)} ({a})" if isinstance(a, str) else ""
                     for c, t, a in zip(out["m_c"], out["m"], out["arm"], strict=True)]  # fmt: skip
    out = out[out["p_value"].notna() & (out["kish"] >= s.balance_min_units)]
    return _gate_by_family(out, gated, s.balance_alpha, "pre_period_balance")


def _gate_by_family(out: pd.DataFrame, gated: dict[str, set[str]], alpha: float,
                    check: str) -> pd.DataFrame:  # fmt: skip
    """Thresholds: alpha / (gated metrics tested that day) for the gated metrics, alpha (a
    warning) for the others."""
    out = out.reset_index(drop=True)
    is_gate = np.array([m in gated.get(e, set()) for e, m in
                        zip(out["experiment_id"], out["metric"], strict=True)], bool)  # fmt: skip
    tested = out["p_value"].notna().to_numpy() & is_gate
    family = pd.Series(tested).groupby([out["experiment_id"], out["as_of_date"]]).transform("sum")
    out["is_gate"] = is_gate
    out["threshold"] = np.where(is_gate, alpha / np.maximum(family.to_numpy(float), 1.0), alpha)
    out["passed"] = _passed(out["p_value"], out["threshold"])
    out["check"], out["segment"] = check, "overall"
    return _rows(out)


def _g(value: float) -> str:
    return "n/a" if not np.isfinite(value) else f"{value:.4g}"


# --- telemetry completeness ---------------------------------------------------------------


def completeness_checks(stats: pd.DataFrame, units: pd.DataFrame, gated: dict[str, set[str]],
                        s: HealthSettings) -> pd.DataFrame:  # fmt: skip
    """``telemetry_completeness`` rows, one per experiment x date x metric.

    Per arm: the share of its assigned units with at least one observation of the metric
    (``n_units`` of the metric / assigned units) and observations per such unit
    (``n_events / n_units``). Pearson's chi-square test of equal shares over the arms (the
    k x 2 table observed / not observed; statsmodels ``proportions_chisquare``); an arm with no
    observation at all counts 0. ``statistic`` is the treatment arm's share minus control's,
    for the treatment arm farthest from control.
    """
    from statsmodels.stats.proportion import proportions_chisquare

    a = units[units["segment_type"] == "overall"]
    m = stats[stats["segment_type"] == "overall"]
    if a.empty or m.empty:
        return empty()
    a = a.assign(as_of_date=_day(a["as_of_date"]))[["experiment_id", "as_of_date", "arm", "units"]]
    m = m.assign(as_of_date=_day(m["as_of_date"]))
    # a quantile metric's units are the same at every quantile: one row per metric and arm
    m = m.drop_duplicates(["experiment_id", "as_of_date", "metric", "arm"])
    metrics = m[["experiment_id", "as_of_date", "metric"]].drop_duplicates()
    grid = metrics.merge(a, on=["experiment_id", "as_of_date"])
    grid = grid.merge(m[["experiment_id", "as_of_date", "metric", "arm", "n_units", "n_events"]],
                      on=["experiment_id", "as_of_date", "metric", "arm"], how="left")  # fmt: skip
    grid["n_units"] = np.minimum(grid["n_units"].fillna(0.0), grid["units"])
    grid["n_events"] = grid["n_events"].fillna(0.0)
    control_arm = m[m["is_control"].astype(bool)].groupby("experiment_id")["arm"].first()
    rows = []
    for (e, day, metric), g in grid.groupby(["experiment_id", "as_of_date", "metric"], sort=True):
        share = g["n_units"].to_numpy(float) / g["units"].to_numpy(float)
        observed, assigned = g["n_units"].to_numpy(float), g["units"].to_numpy(float)
        if len(g) < 2 or not (assigned > 0).all():
            p, chi2 = np.nan, np.nan
        elif np.all(observed == assigned) or np.all(observed == 0):
            p, chi2 = 1.0, 0.0
        else:
            chi2, p, _ = proportions_chisquare(observed, assigned)
        ca = control_arm.get(e)
        is_c = (g["arm"] == ca).to_numpy()
        diff = share - (share[is_c][0] if is_c.any() else np.nan)
        diff_t = np.where(is_c, np.nan, diff)
        i = int(np.nanargmax(np.abs(diff_t))) if np.isfinite(diff_t).any() else None
        per_unit = np.where(
            observed > 0, g["n_events"].to_numpy(float) / np.maximum(observed, 1), np.nan
        )
        detail = "; ".join(f"{arm} {100 * sh:.1f}% of {int(n):,} units ({_g(pu)} per unit)"
                           for arm, sh, n, pu in zip(g["arm"], share, assigned, per_unit, strict=True))  # fmt: skip
        rows.append({"experiment_id": e, "as_of_date": day, "metric": metric,
                     "statistic": diff[i] if i is not None else np.nan,
                     "treatment_arm": g["arm"].iloc[i] if i is not None else None,
                     "p_value": float(p), "chi2": chi2, "detail": detail})  # fmt: skip
    out = pd.DataFrame(rows)
    return _gate_by_family(out, gated, s.completeness_alpha, "telemetry_completeness")


# --- treatment active ---------------------------------------------------------------------


def treatment_active_checks(tests: pd.DataFrame) -> pd.DataFrame:
    """``treatment_active`` rows from the decision's tests (:func:`stats.decision.decide`):
    each mechanism metric's one-sided test, per look and treatment arm. ``statistic`` is the
    test's z, ``threshold`` its critical value (the always-valid boundary); a warning only (the
    verdict's reason ``treatment_not_shown_active``)."""
    if tests is None or tests.empty:
        return empty()
    t = tests[tests["test"] == "treatment_active"]
    if t.empty:
        return empty()
    metric = t["label"] if "label" in t.columns else t["metric"]
    out = pd.DataFrame({
        "experiment_id": t["experiment_id"].to_numpy(object),
        "as_of_date": _day(t["as_of_date"]).to_numpy(),
        "metric": metric.to_numpy(object), "treatment_arm": t["treatment_arm"].to_numpy(object),
        "statistic": t["statistic"].to_numpy(float), "threshold": t["critical"].to_numpy(float),
        "passed": t["passed"].astype(bool).to_numpy(),
    })  # fmt: skip
    out["detail"] = [f"expected to {b}; " + ("moved that way" if p else "not shown to move")
                     for b, p in zip(t["better"], out["passed"], strict=True)]  # fmt: skip
    out["check"], out["segment"], out["is_gate"] = "treatment_active", "overall", False
    return _rows(out)


# --- the A/A placebo and the canary -------------------------------------------------------


def placebo_input(placebo_stats: pd.DataFrame) -> pd.DataFrame:
    """The placebo mart's rows as the engine's input: each split of each look a segment of its
    own (``segment_type = 'placebo'``, ``segment_value`` ``<as_of_date>#<split>``: every look is
    split afresh, so a split has one look and its always-valid interval is that look's),
    pseudo-arm ``a`` the control."""
    out = placebo_stats.copy()
    day = pd.to_datetime(out["as_of_date"]).dt.strftime("%Y-%m-%d")
    out["segment_type"] = PLACEBO_SEGMENT
    out["segment_value"] = day + "#" + out["placebo_split"].astype(int).map(lambda k: f"{k:02d}")
    out["is_control"] = out["arm"] == "a"
    return out.drop(columns=[c for c in ("placebo_split", "canary_factor") if c in out.columns])


def placebo_tally(results: pd.DataFrame, canary_factor: float, alpha: float) -> pd.DataFrame:
    """Per experiment x date x estimator x split: placebo comparisons and hits.

    A/A (pseudo-arm ``b`` against ``a``): estimator ``<method>`` hits when p < alpha;
    ``<method>/sequential`` when the always-valid interval excludes 0 (looks that have one).
    Canary (``b_canary``, whose values were multiplied by ``canary_factor``): estimator
    ``<method>/relative`` hits when the relative interval covers canary_factor - 1,
    ``<method>/sequential_relative`` the same for the always-valid relative interval (looks
    where it is bounded).
    """
    r = results[results["segment_type"] == PLACEBO_SEGMENT]
    if r.empty:
        return pd.DataFrame(columns=TALLY_COLUMNS)
    split = r["segment_value"].str.split("#").str[1].astype(int)
    r = r.assign(placebo_split=split, as_of_date=_day(r["as_of_date"]))
    lift = canary_factor - 1.0
    aa = r[r["treatment_arm"] == "b"]
    canary = r[r["treatment_arm"] == CANARY_ARM]
    parts = [
        ("aa", aa, "", aa["p_value"].notna(), aa["p_value"] < alpha),
        ("aa", aa, "/sequential", aa["seq_ci_abs_lower"].notna(), aa["is_seq_significant"].astype(bool)),
        ("canary", canary, "/relative", canary["ci_rel_lower"].notna() & canary["ci_rel_upper"].notna(),
         (canary["ci_rel_lower"] <= lift) & (lift <= canary["ci_rel_upper"])),
        ("canary", canary, "/sequential_relative",
         canary["seq_ci_rel_lower"].notna() & canary["seq_ci_rel_upper"].notna(),
         (canary["seq_ci_rel_lower"] <= lift) & (lift <= canary["seq_ci_rel_upper"])),
    ]  # fmt: skip
    frames = []
    for kind, rows, suffix, usable, hit in parts:
        rows = rows[usable].assign(hits=hit[usable].astype(int), comparisons=1,
                                   estimator=rows.loc[usable, "method"] + suffix, kind=kind)  # fmt: skip
        frames.append(rows.groupby(["experiment_id", "as_of_date", "kind", "estimator", "placebo_split"],
                                   as_index=False)[["comparisons", "hits"]].sum())  # fmt: skip
    return pd.concat(frames, ignore_index=True)[TALLY_COLUMNS]


def clustered_binomial_test(hits: np.ndarray, trials: np.ndarray, null: float,
                            min_clusters: int) -> tuple[float, float, float]:  # fmt: skip
    """(share, design effect, z) of a binomial test of clustered binary data.

    Rao and Scott (1992), §2: with clusters j of n_j trials and x_j successes, p = X / N and the
    ratio estimator's variance v = J / (J - 1) sum_j (x_j - p n_j)^2 / N^2; the design effect
    d = v / (p (1 - p) / N), at least 1, divides the binomial count, so the test statistic is
    z = (p - p0) / sqrt(d p0 (1 - p0) / N). With fewer than ``min_clusters`` clusters d is not
    estimated but taken at its upper bound N / J (every cluster one trial).
    """
    x, n = np.asarray(hits, float), np.asarray(trials, float)
    big_n = n.sum()
    if big_n <= 0:
        return np.nan, np.nan, np.nan
    p = x.sum() / big_n
    j = int((n > 0).sum())
    if j < min_clusters:
        deff = big_n / max(j, 1)
    else:
        v = j / (j - 1) * np.sum((x - p * n) ** 2) / big_n**2
        binomial = p * (1 - p) / big_n
        deff = max(1.0, v / binomial) if binomial > 0 else 1.0
    z = (p - null) / np.sqrt(deff * null * (1 - null) / big_n)
    return float(p), float(deff), float(z)


def placebo_checks(tally: pd.DataFrame, dates: list, s: HealthSettings) -> pd.DataFrame:
    """``aa_placebo`` and ``canary_coverage`` rows for each of ``dates``: per experiment and
    estimator the running tally of every day up to that date (:func:`clustered_binomial_test`;
    clusters: each split of each day for the A/A, each day for the canary; every look is split
    afresh, so they are independent re-randomisations, correlated within through the metrics).

    A/A, fixed-horizon estimators: two-sided against alpha (too many rejections is a broken
    estimator; too few, an inflated variance); always-valid estimators: one-sided (they are
    conservative by design, only too many rejections fails). Canary: two-sided against 1 - alpha.
    """
    if tally.empty:
        return empty()
    t = tally.assign(as_of_date=_day(tally["as_of_date"]))
    rows = []
    for day in sorted({pd.Timestamp(d).normalize() for d in dates}):
        upto = t[t["as_of_date"] <= day]
        for (e, kind, est), g in upto.groupby(["experiment_id", "kind", "estimator"], sort=True):
            if not (g["as_of_date"] == day).any():
                continue
            cluster = ["as_of_date", "placebo_split"] if kind == "aa" else ["as_of_date"]
            c = g.groupby(cluster)[["hits", "comparisons"]].sum()
            null = s.placebo_alpha if kind == "aa" else 1.0 - s.placebo_alpha
            share, deff, z = clustered_binomial_test(c["hits"].to_numpy(), c["comparisons"].to_numpy(),
                                                     null, s.min_clusters)  # fmt: skip
            one_sided = est.endswith("/sequential")
            p = float(sps.norm.sf(z)) if one_sided else float(2 * sps.norm.sf(abs(z)))
            n = int(c["comparisons"].sum())
            today = g[g["as_of_date"] == day]
            half = sps.norm.isf(s.placebo_check_alpha / (1 if one_sided else 2)) * np.sqrt(
                deff * null * (1 - null) / n)  # fmt: skip
            band = (
                f"at most {100 * (null + half):.1f}%"
                if one_sided
                else f"band {100 * (null - half):.1f}-{100 * (null + half):.1f}%"
            )
            what = "significant" if kind == "aa" else "covered"
            rows.append({
                "experiment_id": e, "as_of_date": day, "estimator": est, "statistic": share,
                "p_value": p,
                "check": "aa_placebo" if kind == "aa" else "canary_coverage",
                "detail": (f"{int(c['hits'].sum()):,} of {n:,} {what} ({100 * share:.1f}%) over "
                           f"{g['as_of_date'].nunique()} days, {band} (design effect {deff:.2f}); "
                           f"today {int(today['hits'].sum())} of {int(today['comparisons'].sum())}"),
            })  # fmt: skip
    if not rows:
        return empty()
    out = pd.DataFrame(rows)
    out["threshold"] = s.placebo_check_alpha
    out["passed"] = _passed(out["p_value"], out["threshold"])
    out["segment"], out["is_gate"] = "overall", False
    return _rows(out)


# --- all of them --------------------------------------------------------------------------


def gate_checks(units: pd.DataFrame, stats: pd.DataFrame,
                expected_split: dict[str, dict[str, float]], gated: dict[str, set[str]],
                s: HealthSettings | None = None) -> pd.DataFrame:  # fmt: skip
    """The checks that can be gates, from the health counts (``units``) and the sufficient
    statistics (``stats``; their overall rows are read)."""
    s = s or HealthSettings()
    parts = [srm_checks(units, expected_split, s), crossover_checks(units, s),
             balance_checks(stats, gated, s), completeness_checks(stats, units, gated, s)]  # fmt: skip
    parts = [p for p in parts if len(p)]
    return pd.concat(parts, ignore_index=True) if parts else empty()


def failed_gates(health: pd.DataFrame) -> pd.DataFrame:
    """experiment_id, as_of_date, check of every failed gate (each check once a day)."""
    if health is None or health.empty:
        return pd.DataFrame(columns=["experiment_id", "as_of_date", "check"])
    h = health[health["is_gate"].astype(bool) & (health["passed"] == False)]  # noqa: E712
    return (h.assign(as_of_date=_day(h["as_of_date"]))[["experiment_id", "as_of_date", "check"]]
            .drop_duplicates().reset_index(drop=True))  # fmt: skip
