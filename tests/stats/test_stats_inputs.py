"""The engine's input row checks (stats.inputs): impossible rows are rejected one by one.

Each case breaks one arm of an otherwise valid comparison in a way no warehouse can produce;
before these checks the engine analysed every one of them without a word (e.g. a negative
ratio denominator gave a relative lift of -2 with p ~ 1e-100, marked trustworthy).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from _stats_tables import mean_rows, quantile_rows, table

from stats.engine import analyze_table


def ratio_rows(rng: np.random.Generator, n: int = 400) -> list[dict]:
    rows = []
    for i, arm in enumerate("AB"):
        x = 1.0 + rng.poisson(3, n)
        y = rng.gamma(2 * x, 10.0)
        rows.append({
            "experiment_id": "e1", "metric": "r", "metric_kind": "ratio", "is_guardrail": False,
            "segment_type": "overall", "segment_value": "all", "arm": arm, "is_control": i == 0,
            "as_of_date": "2026-01-01", "n_units": n, "sum_y": y.sum(), "sum_y2": (y * y).sum(),
            "sum_x": x.sum(), "sum_x2": (x * x).sum(), "sum_xy": (x * y).sum(),
        })  # fmt: skip
    return rows


def _ratio_negative_denominator(rows):
    rows[1]["sum_x"] = -rows[1]["sum_x"]
    rows[1]["sum_xy"] = -rows[1]["sum_xy"]


CASES = {
    # name: (rows factory, corruption of the treatment row, expected reason)
    "ratio negative count": (ratio_rows, _ratio_negative_denominator, "negative count sum_x"),
    "ratio negative sum of squares": (
        ratio_rows, lambda r: r[1].update(sum_x2=-1.0), "negative sum of squares sum_x2"),
    "mean negative covariate sum of squares": (
        mean_rows, lambda r: r[1].update(sum_c2=-5.0), "negative sum of squares sum_c2"),
    "quantile negative fraction": (
        quantile_rows, lambda r: r[1].update(sum_s=-3.0), "negative count sum_s"),
    "quantile fraction above one": (
        quantile_rows, lambda r: r[1].update(sum_s=r[1]["sum_n"] + 5),
        "fraction below the quantile sum_s / sum_n"),
    "quantile n_events differs from sum_n": (
        quantile_rows, lambda r: r[1].update(n_events=r[1]["sum_n"] + 10),
        "differs from sum_n"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
def test_impossible_row_rejected_with_one_line_reason(rng, case):
    make, corrupt, reason = CASES[case]
    rows = make(rng)
    good = analyze_table(table(rows)).results
    assert len(good) == 1 and not analyze_table(table(rows)).issues
    corrupt(rows)
    out = analyze_table(table(rows))
    bad = [i for i in out.issues if reason in i]
    assert len(bad) == 1, out.issues
    assert bad[0].startswith("row 1 (") and "\n" not in bad[0]
    assert out.results.empty  # the pair lost its treatment arm: nothing is claimed about it
    # the control row is reported as unpaired, with its own reason
    assert any(i.startswith("row 0 (") and "no valid treatment arm" in i for i in out.issues)


def test_arms_of_different_kinds_rejected(rng):
    rows = mean_rows(rng)
    ratio = ratio_rows(rng)[1]
    ratio.update(metric="m")  # same comparison as the mean rows, other kind
    out = analyze_table(table([rows[0], ratio]))
    assert out.results.empty
    assert len(out.issues) == 2
    assert all("different metric kinds: mean, ratio" in i for i in out.issues)


def test_only_the_bad_comparison_is_dropped(rng):
    rows = ratio_rows(rng)
    _ratio_negative_denominator(rows)
    other = mean_rows(rng, metric="m2")
    out = analyze_table(table(rows + other))
    assert list(out.results["metric"]) == ["m2"]
    assert out.results["is_trustworthy"].all() and (out.results["flags"] == "cuped").all()


def test_valid_edge_values_pass(rng):
    """Nothing is flagged that is possible: all events below the quantile, zero numerators."""
    rows = quantile_rows(rng)
    rows[0]["sum_s"] = rows[0]["sum_n"]  # fraction exactly 1 is possible (tiny arm)
    rows[0]["sum_s2"] = rows[0]["sum_n2"]
    rows[0]["sum_sn"] = rows[0]["sum_n2"]
    # ... when no event is above the quantile: the grid above p is the quantile itself
    rows[0]["grid_value"] = [min(v, rows[0]["quantile_value"]) for v in rows[0]["grid_value"]]
    r = ratio_rows(rng)
    r[0].update(sum_y=0.0, sum_y2=0.0, sum_xy=0.0)
    out = analyze_table(pd.concat([table(rows), table(r)], ignore_index=True))
    assert not out.issues
    assert len(out.results) == 2
