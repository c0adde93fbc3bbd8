"""``quicexp stats`` on rows no warehouse can produce (issue 40's audit): each is skipped with
one line naming it, through the real entry point, and the rest of the file is analysed; a file
with nothing to analyse is a data-quality error, not an empty result. Row checks: stats.inputs."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from _stats_tables import mean_rows, quantile_rows, table

from quicexp.app.cli import main
from quicexp.errors import DataQualityError
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


def proportion_rows(rng: np.random.Generator, n: int = 400) -> list[dict]:
    return [
        {"experiment_id": "e1", "metric": "search_abandoning_clients", "metric_kind": "proportion",
         "is_guardrail": False, "segment_type": "overall", "segment_value": "all", "arm": arm,
         "is_control": arm == "A", "as_of_date": "2026-01-01", "n_units": n,
         "sum_y": float((rng.random(n) < 0.3).sum())}
        for arm in "AB"
    ]  # fmt: skip


def latency_quantile_rows(rng: np.random.Generator) -> list[dict]:
    """p95 rows of a registry metric whose values cannot be negative (unit ms)."""
    rows = quantile_rows(rng)
    for r in rows:
        r["metric"] = "request_latency_p"
    return rows


def _shift_down(rows: list[dict]) -> None:
    """Every value of the treatment arm moved down below 0: still a consistent quantile row."""
    r = rows[1]
    shift = 2 * max(r["grid_value"])
    r["quantile_value"] -= shift
    r["grid_value"] = [v - shift for v in r["grid_value"]]


CASES = {
    # name: (rows factory, corruption of the treatment row, expected reason)
    "sum_y2 infinite": (mean_rows, lambda r: r[1].update(sum_y2=float("inf")), "sum_y2 = inf is not finite"),
    "fractional n_units": (
        mean_rows, lambda r: r[1].update(n_units=r[1]["n_units"] + 0.5),
        "n_units = 500.5 is not a whole number of units"),
    "ratio beyond Cauchy-Schwarz": (
        ratio_rows, lambda r: r[1].update(sum_xy=r[1]["sum_xy"] * 1.3),
        "sum_xy = {sum_xy:g} puts the covariance of y and x beyond Cauchy-Schwarz"),
    "fractional proportion successes": (
        proportion_rows, lambda r: r[1].update(sum_y=r[1]["sum_y"] + 0.5),
        "proportion sum_y = {sum_y:g} is not a whole number of units"),
    "fraction below the quantile under p": (
        quantile_rows, lambda r: r[1].update(sum_s=np.floor(0.9 * r[1]["sum_n"])),
        "fraction at or below the quantile sum_s / sum_n = "),
    "sum_s2 above sum_n2": (
        quantile_rows, lambda r: r[1].update(sum_s2=r[1]["sum_n2"] + 10),
        "are not in order: no unit has more events at or below the quantile than events"),
    "quantile ten times outside its grid": (
        quantile_rows, lambda r: r[1].update(quantile_value=10 * r[1]["quantile_value"]),
        "quantile_value = {quantile_value:g} is outside the grid's values around quantile_p"),
    "negative latency quantile": (
        latency_quantile_rows, _shift_down, "is negative, and the metric cannot be"),
}  # fmt: skip


def _csv(rows: list[dict], path) -> None:
    df = table(rows)
    for c in ("grid_p", "grid_value"):
        if c in df:
            df[c] = df[c].map(lambda v: json.dumps([float(x) for x in v]) if isinstance(v, list) else None)
    df.to_csv(path, index=False)


def _stats(capsys, *args) -> tuple[int, list[str]]:
    """``quicexp stats ARGS`` through the console entry point, in process: (exit code, stderr lines)."""
    code = main(["stats", *map(str, args)])
    return code, [line for line in capsys.readouterr().err.splitlines() if line.strip()]


@pytest.mark.filterwarnings("error")  # a numerical warning of the engine fails the test
@pytest.mark.parametrize("case", list(CASES))
def test_an_impossible_row_is_skipped_in_one_line_and_the_rest_analysed(rng, tmp_path, capsys, case):
    make, corrupt, reason = CASES[case]
    rows = make(rng)
    assert not analyze_table(table(rows)).issues  # the uncorrupted pair is fine
    corrupt(rows)
    reason = reason.format(**{k: v for k, v in rows[1].items() if isinstance(v, float)})
    assert analyze_table(table(rows)).results.empty  # and no numerical warning (the marker)
    good = mean_rows(rng, metric="other")
    src, dst = tmp_path / "in.csv", tmp_path / "out.csv"
    _csv(rows + good, src)

    code, err = _stats(capsys, src, dst)

    assert code == 0, err
    assert len(err) == 2, err
    assert err[0].startswith("skipped row 0 (") and "no valid treatment arm" in err[0]
    assert err[1].startswith("skipped row 1 (") and reason in err[1], err[1]
    assert list(pd.read_csv(dst)["metric"]) == ["other"]


def test_a_negative_quantile_is_possible_for_a_metric_that_can_be_negative(rng):
    rows = latency_quantile_rows(rng)
    _shift_down(rows)
    assert analyze_table(table(rows)).issues  # request_latency_p is in ms: never negative
    for r in rows:
        r["metric"] = "clock_offset_p"  # not in the registry: no sign is known
    out = analyze_table(table(rows))
    assert not out.issues and len(out.results) == 1


@pytest.mark.parametrize("what", ["header only", "every row skipped"])
def test_nothing_to_analyse_is_a_data_quality_error_and_writes_nothing(rng, tmp_path, capsys, what):
    rows = mean_rows(rng)
    src, dst = tmp_path / "in.csv", tmp_path / "out.csv"
    if what == "header only":
        table(rows).head(0).to_csv(src, index=False)
    else:
        rows[1]["sum_y2"] = float("inf")
        _csv(rows, src)

    code, err = _stats(capsys, src, dst)

    assert code == DataQualityError.exit_code == 4
    assert err[-1].startswith("quicexp: error: no comparison could be analysed"), err
    assert ("no rows" if what == "header only" else "2 rows, all skipped") in err[-1]
    assert len(err) == (1 if what == "header only" else 3)
    assert not dst.exists()


def test_no_numerical_warning_reaches_the_console(rng, tmp_path):
    """The audit's Cauchy-Schwarz row made numpy print RuntimeWarnings on stderr; through the
    installed script, stderr holds only the command's own lines."""
    rows = ratio_rows(rng) + mean_rows(rng, metric="other")
    rows[1]["sum_xy"] *= 1.3
    src = tmp_path / "in.csv"
    _csv(rows, src)
    proc = subprocess.run(
        [sys.executable, "-W", "always", "-m", "quicexp.app.cli", "stats", str(src), str(tmp_path / "o.csv")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert all(line.startswith("skipped row ") for line in proc.stderr.splitlines()), proc.stderr
