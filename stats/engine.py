"""Library entry point: sufficient-statistics table in, results table out.

The pipeline calls :func:`analyze`. pandas is used here only to validate, pair arms and
assemble the output; every number comes from the numpy modules of this package, called
once per metric kind on whole columns (no Python loop per row).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats as sps

from stats import power
from stats.corrections import adjust_p_values
from stats.cuped import cuped_adjust
from stats.frequentist import compare, linearize
from stats.inputs import describe, grid_matrices, normalize, row_problems
from stats.quantile import quantile_arm
from stats.results import ArmEstimate, ComparisonResult
from stats.schema import COVARIATES, GROUP_COLUMNS, OUTPUT_COLUMNS, REQUIRED_COLUMNS
from stats.sequential import (
    calibrated_alpha,
    confidence_sequence,
    relative_sequence,
    running_intersection,
)
from stats.settings import AnalysisSettings
from stats.srm_table import srm_columns
from stats.statistics import (
    MeanCovariate,
    MeanStatistic,
    ProportionStatistic,
    QuantileStatistic,
    RatioCovariate,
    RatioStatistic,
)

logger = logging.getLogger(__name__)

_KEY = [*GROUP_COLUMNS, "quantile_key"]
_METHOD = {"mean": "welch_t", "proportion": "z_proportion", "ratio": "delta_ratio",
           "quantile": "quantile_outer_ci"}  # fmt: skip


@dataclass(frozen=True)
class AnalysisOutput:
    """Results plus one message per input row that could not be analysed."""

    results: pd.DataFrame
    issues: list[str] = field(default_factory=list)


def analyze(table: pd.DataFrame, settings: AnalysisSettings | None = None) -> pd.DataFrame:
    """Analyse every treatment-vs-control comparison in a sufficient-statistics table.

    Bad rows are skipped and logged (logger ``stats.engine``, one warning per row); use
    :func:`analyze_table` to get the messages back.

    Args:
        table: the input table documented in docs/stats.md (one row per experiment x
            metric x segment x arm x as_of_date).
        settings: analysis settings; defaults to :class:`AnalysisSettings()`.

    Returns:
        One row per experiment x metric x segment x as_of_date x treatment arm with the
        columns of :data:`stats.schema.OUTPUT_COLUMNS`.
    """
    out = analyze_table(table, settings)
    for message in out.issues:
        logger.warning(message)
    return out.results


def analyze_table(table: pd.DataFrame, settings: AnalysisSettings | None = None) -> AnalysisOutput:
    """Like :func:`analyze` but returns the bad-row messages instead of logging them.

    Raises:
        stats.inputs.SchemaError: a required column is missing.
    """
    s = settings or AnalysisSettings()
    df = normalize(table, REQUIRED_COLUMNS)
    grid_p, grid_value, df["grid_ok"] = grid_matrices(df)
    reasons = row_problems(df)
    good = df[reasons == ""]
    pairs, pair_reasons = _pair(good)
    reasons = reasons.copy()
    for row_id, text in pair_reasons.items():
        reasons.iloc[row_id] = text
    issues = [f"{describe(df.iloc[i])}: {reasons.iloc[i]}" for i in np.flatnonzero(reasons != "")]
    if pairs.empty:
        return AnalysisOutput(pd.DataFrame({c: [] for c in OUTPUT_COLUMNS}), issues)
    res = _compute(pairs, grid_p, grid_value, s)
    res = res.join(srm_columns(df, pairs, s))
    return AnalysisOutput(_finish(res, s), issues)


def _pair(good: pd.DataFrame) -> tuple[pd.DataFrame, dict[int, str]]:
    """Join every treatment row to its group's single control row."""
    reasons: dict[int, str] = {}
    good = good.assign(_gid=good.groupby(_KEY, dropna=False, sort=False).ngroup())
    is_ctrl = good["is_control"].to_numpy(bool)
    gid = good["_gid"].to_numpy()
    n_groups = int(gid.max()) + 1 if gid.size else 0
    n_ctrl = np.bincount(gid[is_ctrl], minlength=n_groups)
    n_trt = np.bincount(gid[~is_ctrl], minlength=n_groups)
    row_id = good["row_id"].to_numpy()
    for mask, text in (
        (~is_ctrl & (n_ctrl[gid] == 0), "no valid control arm for this comparison"),
        (is_ctrl & (n_trt[gid] == 0), "no valid treatment arm for this comparison"),
        (n_ctrl[gid] > 1, "more than one control arm in this comparison"),
    ):
        reasons.update(dict.fromkeys(row_id[mask].tolist(), text))
    usable = good[(n_ctrl[gid] == 1) & (n_trt[gid] > 0)]
    ctrl, trt = usable[usable["is_control"]], usable[~usable["is_control"]]
    pairs = trt.merge(ctrl, on="_gid", suffixes=("_t", "_c"), how="inner")
    for c in [*_KEY, "metric_kind", "is_guardrail"]:
        pairs[c] = pairs[f"{c}_c"]
    return pairs, reasons


def _col(pairs: pd.DataFrame, name: str, side: str, m: np.ndarray) -> np.ndarray:
    return pairs[f"{name}_{side}"].to_numpy(dtype=float)[m]


def _statistic(pairs: pd.DataFrame, kind: str, side: str, m: np.ndarray, cov: bool) -> object:
    """Batch statistic of one kind for the control ('c') or treatment ('t') side."""

    def g(name: str) -> np.ndarray:
        return _col(pairs, name, side, m)

    n = g("n_units")
    if kind in ("mean", "proportion"):
        covariate = MeanCovariate(g("sum_c"), g("sum_c2"), g("sum_yc")) if cov else None
        y2 = g("sum_y") if kind == "proportion" else g("sum_y2")
        cls = ProportionStatistic if kind == "proportion" else MeanStatistic
        return cls(n, g("sum_y"), y2, covariate)
    covariate = RatioCovariate(**{c: g(c) for c in COVARIATES["ratio"]}) if cov else None
    return RatioStatistic(
        n, g("sum_y"), g("sum_y2"), g("sum_x"), g("sum_x2"), g("sum_xy"), covariate
    )


def _quantile_arms(
    pairs: pd.DataFrame,
    m: np.ndarray,
    grid_p: np.ndarray,
    grid_value: np.ndarray,
    z: float,
    s: AnalysisSettings,
) -> tuple[ArmEstimate, ArmEstimate, np.ndarray]:
    """Control and treatment quantile estimates of the rows ``m``, and grid flag bits.

    Bit 1: the grid did not cover the window (extrapolated); bit 2: the window was widened.
    """
    names = ("n_units", "quantile_p", "quantile_value", "n_events", "sum_s", "sum_s2",
             "sum_n", "sum_n2", "sum_sn")  # fmt: skip
    arms = []
    for side in ("c", "t"):
        rid = pairs[f"row_id_{side}"].to_numpy()[m]
        q = QuantileStatistic(
            *(_col(pairs, c, side, m) for c in names), grid_p[rid], grid_value[rid]
        )
        arms.append(quantile_arm(q, z, s.quantile_window))
    flag = np.where(arms[0].grid_extrapolated | arms[1].grid_extrapolated, 1, 0)
    flag |= np.where(arms[0].window_widened | arms[1].window_widened, 2, 0)
    return arms[0].arm, arms[1].arm, flag


def _has_covariates(pairs: pd.DataFrame, kind: str, s: AnalysisSettings) -> np.ndarray:
    """Rows where CUPED applies: all covariate columns of ``kind`` present in both arms."""
    ok = np.full(len(pairs), s.cuped and kind in COVARIATES)
    for c in COVARIATES.get(kind, []):
        ok &= pairs[f"{c}_c"].notna().to_numpy() & pairs[f"{c}_t"].notna().to_numpy()
    return ok


def _compute(
    pairs: pd.DataFrame, grid_p: np.ndarray, grid_value: np.ndarray, s: AnalysisSettings
) -> pd.DataFrame:
    """Comparison columns for every pair, one vectorised call per kind (x CUPED or not)."""
    rows = len(pairs)
    cols: dict[str, np.ndarray] = {
        "cuped_theta": np.full(rows, np.nan),
        "cuped_variance_reduction": np.full(rows, np.nan),
        "_grid_flag": np.zeros(rows, np.int64),
        "_cuped": np.zeros(rows, bool),
        "var_control": np.full(rows, np.nan),
        "var_treatment": np.full(rows, np.nan),
        "_information": _information(pairs),
    }
    z = float(sps.norm.ppf(1 - s.alpha / 2))
    kind = pairs["metric_kind"].to_numpy(dtype=object)
    for k in ("mean", "proportion", "ratio", "quantile"):
        has_cov = _has_covariates(pairs, k, s)
        for m, cov in ((kind == k) & ~has_cov, False), ((kind == k) & has_cov, True):
            if not m.any():
                continue
            if k == "quantile":
                ctl, trt, cols["_grid_flag"][m] = _quantile_arms(pairs, m, grid_p, grid_value, z, s)
            elif cov:
                cu = cuped_adjust(
                    _statistic(pairs, k, "c", m, True), _statistic(pairs, k, "t", m, True)
                )
                ctl, trt = cu.control, cu.treatment
                cols["cuped_theta"][m] = cu.theta
                cols["cuped_variance_reduction"][m] = cu.variance_reduction
                cols["_cuped"][m] = True
            else:
                ctl = linearize(_statistic(pairs, k, "c", m, False))
                trt = linearize(_statistic(pairs, k, "t", m, False))
            test = "z" if k == "proportion" or s.reference == "z" else "welch"
            _scatter(cols, m, compare(ctl, trt, s.alpha, test, s.relative_ci))
            cols["var_control"][m] = ctl.variance
            cols["var_treatment"][m] = trt.variance
    out = pairs[[*GROUP_COLUMNS, "metric_kind", "is_guardrail"]].copy()
    out["quantile_p"] = pairs["quantile_p_c"].where(pairs["metric_kind"] == "quantile")
    out["control_arm"], out["treatment_arm"] = pairs["arm_c"], pairs["arm_t"]
    out["n_control"] = pairs["n_units_c"].astype("int64")
    out["n_treatment"] = pairs["n_units_t"].astype("int64")
    for name, arr in cols.items():
        out[name] = arr
    out["method"] = pairs["metric_kind"].map(_METHOD) + np.where(cols["_cuped"], "+cuped", "")
    return out


def _information(pairs: pd.DataFrame) -> np.ndarray:
    """Per pair: the smaller arm's effective number of events behind its estimate.

    A normal interval needs more than a handful of non-zero observations: with none its
    variance estimate is 0 and every interval collapses. Per arm, from the sums alone:
    proportion min(events, non-events); mean (sum y)^2 / sum y^2 (the number of units with a
    non-zero value when those values are equal: Kish's effective sample size of the
    non-negative values); ratio the smaller of the numerator's and the denominator's;
    quantile min(p, 1 - p) x events (observations beyond the quantile). The always-valid
    interval skips looks below ``AnalysisSettings.sequential_min_events``.
    """
    kind = pairs["metric_kind"].to_numpy(dtype=object)
    out = np.full(len(pairs), np.inf)
    for side in ("c", "t"):

        def g(name: str, side: str = side) -> np.ndarray:
            return pairs[f"{name}_{side}"].to_numpy(dtype=float)

        n, sy, sy2 = g("n_units"), g("sum_y"), g("sum_y2")
        with np.errstate(divide="ignore", invalid="ignore"):
            kish_y = np.where(sy2 > 0, sy * sy / sy2, 0.0)
            kish_x = np.where(g("sum_x2") > 0, g("sum_x") ** 2 / g("sum_x2"), 0.0)
            p = g("quantile_p")
            beyond_quantile = np.minimum(p, 1.0 - p) * g("n_events")
            info = np.select(
                [kind == "proportion", kind == "mean", kind == "ratio", kind == "quantile"],
                [np.minimum(sy, n - sy), kish_y, np.minimum(kish_y, kish_x), beyond_quantile],
                np.nan,
            )
        out = np.fmin(out, np.where(np.isfinite(info), info, 0.0))
    return out


def _scatter(cols: dict[str, np.ndarray], m: np.ndarray, r: ComparisonResult) -> None:
    """Write a subset's results into full-length output columns."""
    rows = m.size
    for name, v in vars(r).items():
        if name not in cols:
            cols[name] = np.zeros(rows, bool) if name == "rel_unbounded" else np.full(rows, np.nan)
        cols[name][m] = v


def _finish(res: pd.DataFrame, s: AnalysisSettings) -> pd.DataFrame:
    """Corrections, sequential intervals, MDE, trust and flags; final column order."""
    guard = res["is_guardrail"].to_numpy(bool) | res["metric"].isin(s.guardrail_metrics).to_numpy()
    res["is_guardrail"] = guard
    res["family"] = np.where(guard, "guardrail", "primary")
    fam_id = res.groupby(["experiment_id", "as_of_date", "family"], sort=False).ngroup().to_numpy()
    p = res["p_value"].to_numpy(float)
    adj = np.full(len(res), np.nan)
    adj[~guard] = adjust_p_values(p[~guard], fam_id[~guard], s.correction)
    adj[guard] = adjust_p_values(p[guard], fam_id[guard], s.guardrail_correction)
    res["p_value_adjusted"] = adj
    res["correction_method"] = np.where(guard, s.guardrail_correction, s.correction)
    res["is_significant"] = adj < s.alpha
    plan = _plan(res, s)
    seq_flags = _sequential(res, s, plan)
    res["mde_abs"] = power.mde(res["se_abs"].to_numpy() ** 2, s.alpha, s.target_power)
    with np.errstate(divide="ignore", invalid="ignore"):
        res["mde_rel"] = res["mde_abs"] / res["value_control"].abs()
    _power_columns(res, s, plan)
    res["relative_method"] = s.relative_ci
    res["alpha"] = s.alpha
    res["se_control"] = np.sqrt(res["var_control"].to_numpy(float))
    res["se_treatment"] = np.sqrt(res["var_treatment"].to_numpy(float))
    res["effective_events"] = res["_information"]
    res["sequential_tuning_n"] = plan.tuning_n
    res["sequential_calibrated"] = plan.calibrated
    nonfinite = ~np.isfinite(res["p_value"].to_numpy(float))
    flags = {
        "srm": res["_srm"].to_numpy(bool),
        "srm_segment": res["_srm_segment"].to_numpy(bool),
        "cuped": res["_cuped"].to_numpy(bool),
        "fieller_unbounded": res["rel_unbounded"].to_numpy(bool),
        "quantile_grid_extrapolated": (res["_grid_flag"].to_numpy() & 1).astype(bool),
        "quantile_window_widened": (res["_grid_flag"].to_numpy() & 2).astype(bool),
        "not_computable": nonfinite,
        "sequential_past_plan": plan.past_plan,
        "sequential_beyond_plan": plan.beyond_plan,
        "sequential_insufficient_data": (seq_flags & 1).astype(bool),
        "sequential_rel_unbounded": (seq_flags & 2).astype(bool),
        "sequential_conflict": (seq_flags & 4).astype(bool),
    }
    text = np.full(len(res), "", dtype=object)
    for name, mask in flags.items():
        text = np.where(mask, np.where(text == "", name, text + ";" + name), text)
    res["flags"] = text
    res["is_trustworthy"] = ~(res["_untrusted"].to_numpy(bool) | nonfinite)
    res = res.sort_values([*GROUP_COLUMNS, "quantile_p", "treatment_arm"], na_position="first")
    res["as_of_date"] = res["as_of_date"].dt.date
    return res[OUTPUT_COLUMNS].reset_index(drop=True)


@dataclass(frozen=True)
class _Plan:
    """Per result row: planned units of each arm of the pair (NaN: no plan), the sequence's
    N* and level, the target effect, whether the look is past the planned days, and whether
    the pair's units exceed the planned total N*."""

    n_control: np.ndarray
    n_treatment: np.ndarray
    tuning_n: np.ndarray
    seq_alpha: np.ndarray
    target: np.ndarray
    past_plan: np.ndarray
    beyond_plan: np.ndarray
    calibrated: np.ndarray


def _plan(res: pd.DataFrame, s: AnalysisSettings) -> _Plan:
    """The registry's plan of each row's experiment, as planned arm sizes and sequence inputs.

    planned_units_per_arm: arm a plans units x (number of arms) x share_a (``expected_split``;
    equal split when the experiment is not listed). planned_days alone: each arm's current
    size times planned_days / days elapsed (unit counts only, never outcomes), at least the
    current size. N* is the pair's planned total. Wherever N* comes from a plan, the level is
    the one calibrated to monitoring up to N* (:func:`calibrated_alpha`: it covers any schedule
    of looks up to N*, so ``planned_days`` is not needed for it); after the planned days it is
    alpha (flag ``sequential_past_plan``), and a look with more units than N* is flagged
    ``sequential_beyond_plan`` (the calibration no longer covers it).
    """
    rows = len(res)
    nc_plan, nt_plan = np.full(rows, np.nan), np.full(rows, np.nan)
    target = np.full(rows, np.nan)
    past = np.zeros(rows, bool)
    exp = res["experiment_id"].to_numpy(dtype=object)
    nc = res["n_control"].to_numpy(float)
    nt = res["n_treatment"].to_numpy(float)
    for eid, p in s.plans.items():
        m = exp == eid
        if not m.any():
            continue
        if p.target_relative_effect is not None:
            target[m] = p.target_relative_effect
        elapsed = None
        if p.start_date is not None:
            start = np.datetime64(p.start_date, "D")
            days = res.loc[m, "as_of_date"].to_numpy().astype("datetime64[D]")
            elapsed = (days - start).astype(np.int64) + 1.0
        if p.planned_days is not None and elapsed is not None:
            past[m] = elapsed > p.planned_days
        if p.planned_units_per_arm is not None:
            split = s.expected_split.get(eid)
            for side, arr in (("control_arm", nc_plan), ("treatment_arm", nt_plan)):
                if split:
                    total = sum(split.values())
                    share = res.loc[m, side].map(split).to_numpy(float) / total
                    arr[m] = p.planned_units_per_arm * len(split) * share
                else:
                    arr[m] = p.planned_units_per_arm
        elif p.planned_days is not None and elapsed is not None:
            factor = np.maximum(p.planned_days / np.maximum(elapsed, 1.0), 1.0)
            nc_plan[m], nt_plan[m] = nc[m] * factor, nt[m] * factor
    planned = np.isfinite(nc_plan + nt_plan)
    tuning = np.where(planned, nc_plan + nt_plan, s.sequential_tuning_n)
    seq_alpha = np.full(rows, s.seq_alpha)
    calibrated = planned & ~past
    if calibrated.any():
        seq_alpha[calibrated] = calibrated_alpha(s.seq_alpha)
    with np.errstate(invalid="ignore"):
        beyond = planned & (nc + nt > tuning * (1.0 + 1e-9))
    return _Plan(nc_plan, nt_plan, tuning, seq_alpha, target, past, beyond, calibrated)


def _power_columns(res: pd.DataFrame, s: AnalysisSettings, plan: _Plan) -> None:
    """MDE of the relative delta now and at the planned size, the power flag, width ratio.

    MDE = (q_{1-alpha/2} + q_{power}) se_rel with q the t quantiles at the comparison's df
    (normal for z rows): the effect a level-alpha two-sided test detects with probability
    ``target_power`` (the t form of statsmodels' TTestIndPower to first order). At the planned
    size se_rel scales by sqrt(current total / planned total) (the split kept) and q is normal.
    """
    df = res["df"].to_numpy(float)
    se_rel = res["se_rel"].to_numpy(float)
    with np.errstate(invalid="ignore"):
        mult = sps.t.ppf(1 - s.alpha / 2, df) + sps.t.ppf(s.target_power, df)
    res["mde_relative"] = mult * se_rel
    n_now = (res["n_control"] + res["n_treatment"]).to_numpy(float)
    n_plan = np.maximum(plan.n_control + plan.n_treatment, n_now)
    z_mult = sps.norm.ppf(1 - s.alpha / 2) + sps.norm.ppf(s.target_power)
    with np.errstate(invalid="ignore", divide="ignore"):
        res["mde_relative_planned"] = z_mult * se_rel * np.sqrt(n_now / n_plan)
    res["target_relative_effect"] = plan.target
    reach = res["mde_relative_planned"].fillna(res["mde_relative"]).to_numpy(float)
    with np.errstate(invalid="ignore"):
        res["is_underpowered"] = (
            np.isfinite(plan.target) & np.isfinite(reach) & (reach > plan.target)
        )
    with np.errstate(invalid="ignore", divide="ignore"):
        res["sequential_width_ratio"] = (
            res["seq_ci_abs_upper"] - res["seq_ci_abs_lower"]
        ).to_numpy(float) / (res["ci_abs_upper"] - res["ci_abs_lower"]).to_numpy(float)


def _sequential(res: pd.DataFrame, s: AnalysisSettings, plan: _Plan) -> np.ndarray:
    """Confidence sequences (absolute; relative by Fieller at the sequence's boundary),
    intersected over the table's looks that carry enough information.

    A look whose smaller arm has fewer than ``sequential_min_units`` units or
    ``sequential_min_events`` effective events
    (:func:`_information`) gets no sequential interval and is left out of the intersection:
    its variance estimate is not yet a variance (0 with no events), and one degenerate look
    would otherwise pin every later intersection. Unbounded relative looks add no constraint.
    Should a running intersection become empty (the sequence contradicted by the data: at
    most alpha in probability for a valid sequence), the look's own interval is reported and
    the row is flagged ``sequential_conflict`` instead of printing an empty interval.

    Returns:
        The per-row flag bits: 1 insufficient data, 2 relative unbounded, 4 conflict.
    """
    n_total = (res["n_control"] + res["n_treatment"]).to_numpy(float)
    keys = ["experiment_id", "metric", "segment_type", "segment_value", "treatment_arm",
            "quantile_p"]  # fmt: skip
    comp_id = res.groupby(keys, dropna=False, sort=False).ngroup().to_numpy()
    day = res["as_of_date"].to_numpy().astype("int64")
    ok = (res["_information"].to_numpy(float) >= s.sequential_min_events) & (
        np.minimum(res["n_control"], res["n_treatment"]).to_numpy(float) >= s.sequential_min_units
    )
    flags = np.where(ok, 0, 1)
    nan = np.full(len(res), np.nan)

    est = res["delta_abs"].to_numpy(float)
    cs = confidence_sequence(est, res["se_abs"].to_numpy(float) ** 2, n_total, plan.seq_alpha,
                             plan.tuning_n, nominal_alpha=s.seq_alpha)  # fmt: skip
    lo_look = np.where(ok, cs.ci_lower, np.nan)
    hi_look = np.where(ok, cs.ci_upper, np.nan)
    lo, hi, p = running_intersection(comp_id, day, lo_look, hi_look, np.where(ok, cs.p_value, nan))
    empty = lo > hi
    res["seq_ci_abs_lower"] = np.where(empty, lo_look, lo)
    res["seq_ci_abs_upper"] = np.where(empty, hi_look, hi)
    res["seq_p_value"] = p

    ctl = ArmEstimate(res["value_control"].to_numpy(float), res["var_control"].to_numpy(float),
                      res["n_control"].to_numpy(float))  # fmt: skip
    trt = ArmEstimate(res["value_treatment"].to_numpy(float),
                      res["var_treatment"].to_numpy(float), res["n_treatment"].to_numpy(float))
    rlo, rhi, unbounded = relative_sequence(ctl, trt, n_total, plan.seq_alpha, plan.tuning_n)
    rlo_look = np.where(ok & ~unbounded, rlo, np.nan)
    rhi_look = np.where(ok & ~unbounded, rhi, np.nan)
    lo_r, hi_r, _ = running_intersection(comp_id, day, rlo_look, rhi_look, nan)
    empty_r = lo_r > hi_r
    res["seq_ci_rel_lower"] = np.where(empty_r, rlo_look, lo_r)
    res["seq_ci_rel_upper"] = np.where(empty_r, rhi_look, hi_r)
    flags |= np.where(ok & unbounded & np.isnan(lo_r), 2, 0)
    flags |= np.where(empty | empty_r, 4, 0)
    res["is_seq_significant"] = (res["seq_ci_abs_lower"] > 0) | (res["seq_ci_abs_upper"] < 0)
    return flags
