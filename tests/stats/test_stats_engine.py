"""analyze(): pairing, bad rows, SRM gate, families, sequential looks, output contract."""

from __future__ import annotations

import json
import logging

import numpy as np
import pandas as pd
import pytest
from _stats_tables import mean_rows, quantile_rows, table
from scipy import stats as sps

from stats.engine import analyze, analyze_table
from stats.inputs import SchemaError
from stats.schema import OUTPUT_COLUMNS
from stats.settings import AnalysisSettings


def test_output_has_exactly_the_documented_columns(rng):
    res = analyze(table(mean_rows(rng) + quantile_rows(rng)))
    assert list(res.columns) == OUTPUT_COLUMNS
    assert len(res) == 2
    assert set(res["method"]) == {"welch_t+cuped", "quantile_outer_ci"}


def test_engine_equals_scipy_welch_without_covariates(rng):
    rows = mean_rows(rng, shift=0.2)
    for r in rows:
        for c in ("sum_c", "sum_c2", "sum_yc"):
            r.pop(c)
    res = analyze(table(rows)).iloc[0]
    a, b = rows
    sd = lambda r: np.sqrt((r["sum_y2"] - r["sum_y"] ** 2 / r["n_units"]) / (r["n_units"] - 1))  # noqa: E731
    ref = sps.ttest_ind_from_stats(b["sum_y"] / b["n_units"], sd(b), b["n_units"],
                                   a["sum_y"] / a["n_units"], sd(a), a["n_units"], equal_var=False)  # fmt: skip
    assert res["p_value"] == pytest.approx(ref.pvalue, rel=1e-9)
    assert res["method"] == "welch_t"
    assert res["seq_ci_abs_lower"] < res["ci_abs_lower"]


def test_bad_rows_reported_once_and_others_computed(rng):
    good = mean_rows(rng, metric="good")
    few = mean_rows(rng, metric="few")
    few[1]["n_units"] = 1
    neg = mean_rows(rng, metric="neg")
    neg[0]["sum_y2"] = -5.0
    kind = mean_rows(rng, metric="kind")
    kind[1]["metric_kind"] = "median"
    orphan = mean_rows(rng, metric="orphan")[1:]
    out = analyze_table(table(good + few + neg + kind + orphan))
    assert list(out.results["metric"]) == ["good"]
    # 4 bad rows + 3 rows whose partner arm is bad or absent
    assert len(out.issues) == 7
    text = "\n".join(out.issues)
    for needle in ("n_units < 2", "negative variance", "unknown metric kind 'median'",
                   "no valid control arm", "no valid treatment arm"):  # fmt: skip
        assert needle in text
    assert all("\n" not in i and i.startswith("row ") for i in out.issues)


def test_analyze_logs_issues(rng, caplog):
    rows = mean_rows(rng)
    rows[0]["arm"] = None
    with caplog.at_level(logging.WARNING, logger="stats.engine"):
        res = analyze(table(rows))
    assert res.empty
    assert any("missing arm" in r.message for r in caplog.records)


def test_missing_required_column_raises(rng):
    with pytest.raises(SchemaError, match="n_units"):
        analyze(table(mean_rows(rng)).drop(columns="n_units"))


def test_srm_marks_whole_experiment_untrustworthy(rng):
    rows = mean_rows(rng, metric="m1", n=10_000) + mean_rows(rng, metric="m2", n=10_000)
    rows += mean_rows(rng, metric="m1", n=10_000, segment=("platform", "Windows"))
    for r in rows:
        if r["segment_type"] == "overall" and r["arm"] == "B":
            r["n_units"] = 10_600
    res = analyze(table(rows))
    assert res["srm_p_value"].lt(0.001).all()
    assert not res["is_trustworthy"].any()
    assert res["flags"].str.contains("srm").all()
    ok = analyze(table(rows), AnalysisSettings(expected_split={"e1": {"A": 10_000, "B": 10_600}}))
    overall = ok[ok["segment_type"] == "overall"]
    assert overall["is_trustworthy"].all() and overall["srm_p_value"].gt(0.5).all()


def test_segment_srm_scope(rng):
    rows = mean_rows(rng, n=5000) + mean_rows(rng, n=5000, segment=("platform", "iOS"))
    rows[-1]["n_units"] = 5600
    res = analyze(table(rows)).set_index("segment_value")
    assert not res.loc["iOS", "is_trustworthy"] and res.loc["all", "is_trustworthy"]
    assert "srm_segment" in res.loc["iOS", "flags"]
    strict = analyze(table(rows), AnalysisSettings(srm_segment_scope="experiment"))
    assert not strict["is_trustworthy"].any()


def test_guardrails_are_their_own_family(rng):
    rows = []
    for i in range(4):
        rows += mean_rows(rng, metric=f"p{i}", shift=0.1 * i)
    rows += mean_rows(rng, metric="g0", guardrail=True, shift=0.15)
    res = analyze(table(rows), AnalysisSettings(guardrail_metrics=frozenset({"p3"})))
    g = res[res["family"] == "guardrail"]
    assert set(g["metric"]) == {"g0", "p3"}
    from statsmodels.stats.multitest import multipletests

    np.testing.assert_allclose(
        g["p_value_adjusted"], multipletests(g["p_value"], method="fdr_bh")[1]
    )
    prim = res[res["family"] == "primary"]
    np.testing.assert_allclose(
        prim["p_value_adjusted"], multipletests(prim["p_value"], method="fdr_bh")[1]
    )


def test_multiple_treatment_arms_each_compared_to_control(rng):
    res = analyze(table(mean_rows(rng, arms=("ctl", "t1", "t2"))))
    assert list(res["treatment_arm"]) == ["t1", "t2"]
    assert (res["control_arm"] == "ctl").all()


def test_sequential_interval_intersects_over_looks(rng):
    rows = []
    for d in range(1, 6):
        rows += mean_rows(rng, n=200 * d, day=f"2026-01-0{d}")
    res = analyze(table(rows)).sort_values("as_of_date")
    assert res["seq_ci_abs_lower"].is_monotonic_increasing
    assert res["seq_ci_abs_upper"].is_monotonic_decreasing
    assert (
        res["seq_ci_abs_upper"] - res["seq_ci_abs_lower"]
        > res["ci_abs_upper"] - res["ci_abs_lower"]
    ).all()


def test_fieller_setting_and_mde(rng):
    res = analyze(table(mean_rows(rng)), AnalysisSettings(relative_ci="fieller")).iloc[0]
    assert res["relative_method"] == "fieller"
    z = sps.norm.ppf(0.975) + sps.norm.ppf(0.8)
    assert res["mde_abs"] == pytest.approx(z * res["se_abs"], rel=1e-12)
    assert res["mde_rel"] == pytest.approx(res["mde_abs"] / abs(res["value_control"]), rel=1e-12)


def test_cuped_can_be_switched_off(rng):
    rows = mean_rows(rng)
    on = analyze(table(rows)).iloc[0]
    off = analyze(table(rows), AnalysisSettings(cuped=False)).iloc[0]
    assert on["method"] == "welch_t+cuped" and off["method"] == "welch_t"
    assert on["se_abs"] < off["se_abs"]
    assert np.isnan(off["cuped_theta"])


def test_quantile_row_in_engine(rng):
    res = analyze(table(quantile_rows(rng))).iloc[0]
    assert res["quantile_p"] == 0.95 and res["metric_kind"] == "quantile"
    assert res["ci_abs_lower"] < res["delta_abs"] < res["ci_abs_upper"]
    assert 2 < res["df"] < np.inf  # Welch-Satterthwaite t on the clustered variances


def test_grid_from_json_strings(rng):
    rows = quantile_rows(rng)
    dump = lambda v: json.dumps([float(x) for x in v])  # noqa: E731
    as_json = table(rows).assign(grid_p=lambda d: d["grid_p"].map(dump),
                                 grid_value=lambda d: d["grid_value"].map(dump))  # fmt: skip
    pd.testing.assert_frame_equal(analyze(as_json), analyze(table(rows)))


def test_engine_ratio_cuped_equals_per_unit_computation(rng):
    """End to end through the table: column mapping, pooled theta, adjusted delta and se."""
    arms, rows = [], []
    for i, arm in enumerate("AB"):
        n = 3000 + 500 * i
        lam, u = rng.lognormal(1, 0.8, n), rng.normal(0, 0.5, n)
        x, d = 1.0 + rng.poisson(lam), 1.0 + rng.poisson(lam)
        y, c = rng.gamma(2 * x, 50 * np.exp(u)), rng.gamma(2 * d, 50 * np.exp(u))
        arms.append((x, y, c, d))
        s = lambda v: float(v.sum())  # noqa: E731
        rows.append({
            "experiment_id": "e", "metric": "lat", "metric_kind": "ratio", "segment_type": "overall",
            "segment_value": "all", "arm": arm, "is_control": i == 0, "as_of_date": "2026-02-01",
            "n_units": n, "sum_y": s(y), "sum_y2": s(y * y), "sum_x": s(x), "sum_x2": s(x * x),
            "sum_xy": s(x * y), "sum_c": s(c), "sum_c2": s(c * c), "sum_d": s(d), "sum_d2": s(d * d),
            "sum_cd": s(c * d), "sum_yc": s(y * c), "sum_yd": s(y * d), "sum_xc": s(x * c),
            "sum_xd": s(x * d),
        })  # fmt: skip
    res = analyze(table(rows)).iloc[0]
    lin = []
    for x, y, c, d in arms:
        r, rc = y.sum() / x.sum(), c.sum() / d.sum()
        lin.append(((y - r * x) / x.mean(), (c - rc * d) / d.mean(), r, rc))
    theta = sum((a.size - 1) * np.cov(a, b)[0, 1] for a, b, _, _ in lin) / sum(
        (a.size - 1) * b.var(ddof=1) for a, b, _, _ in lin
    )
    delta = (lin[1][2] - theta * lin[1][3]) - (lin[0][2] - theta * lin[0][3])
    var = sum((a - theta * b).var(ddof=1) / a.size for a, b, _, _ in lin)
    assert res["method"] == "delta_ratio+cuped"
    assert res["cuped_theta"] == pytest.approx(theta, rel=1e-9)
    assert res["delta_abs"] == pytest.approx(delta, rel=1e-9)
    assert res["se_abs"] == pytest.approx(np.sqrt(var), rel=1e-9)


def test_empty_table_gives_empty_results_with_all_columns():
    out = analyze_table(pd.DataFrame({c: [] for c in ["experiment_id", "metric", "metric_kind",
                        "segment_type", "segment_value", "arm", "is_control", "as_of_date", "n_units"]}))  # fmt: skip
    assert out.results.empty and list(out.results.columns) == OUTPUT_COLUMNS and not out.issues


def test_engine_vectorises_one_kernel_call_per_kind(rng, monkeypatch):
    """The maths runs once per metric kind (x CUPED or not), not once per row."""
    import stats.engine as engine

    calls = []
    real = engine.compare
    monkeypatch.setattr(engine, "compare", lambda *a, **k: calls.append(1) or real(*a, **k))
    rows = []
    for i in range(60):
        rows += mean_rows(rng, metric=f"m{i}", n=50)
    rows += quantile_rows(rng, n=50)
    res = analyze(table(rows))
    assert len(res) == 61
    assert len(calls) == 2  # one for the 60 CUPED means, one for the quantile
