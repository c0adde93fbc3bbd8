"""Power in sight: MDE at the current and planned size, the underpowered flag and the
always-valid interval's extra width, per metric row of the report and the scorecard; results
without these columns (older ones) still render."""

from __future__ import annotations

import _report_frames as frames
import numpy as np
import pytest
from _report_html import FORBIDDEN, soup, table_rows, visible_text
from conftest import DAY, experiment

from reports import ReportData, render
from reports.fmt import MISSING, percent, power
from reports.metrics import metric_label
from reports.scorecard import power_lines, scorecard

PLANNED = "MDE at the planned size"
WIDTH = "always-valid / fixed width"


def _render(results):
    data = ReportData(experiment("fhol_test"), DAY, results)
    return data, render(data)


@pytest.fixture(scope="module")
def powered(fhol_results):
    return _render(frames.with_power(fhol_results, planned_units=40_000, target=0.05))


def _overall(today):
    return today[
        (today["segment_type"] == "overall") & (today["metric"] != "request_latency_curve")
    ]


def test_power_table_shows_current_and_planned_mde_and_flags(powered):
    data, out = powered
    rows = table_rows(soup(out.html), "power-table")
    overall = _overall(data.today)
    assert len(rows) == len(overall)
    assert {PLANNED, "target effect", WIDTH, "power"} <= set(rows[0])
    for r in overall.itertuples(index=False):
        label = metric_label(r.metric, None if np.isnan(r.quantile_p) else r.quantile_p)
        (row,) = [x for x in rows if x["metric"] == label]
        planned = r.mde_relative_planned
        assert row[PLANNED] == (
            ("±" + percent(planned, signed=False)) if np.isfinite(planned) else MISSING
        )
        if np.isfinite(planned) and planned > 0.01:  # a plain reading, independent of the formatter
            assert row[PLANNED] == f"±{planned * 100:.1f}%"
        assert row["target effect"] == "±5.0%"
        ratio = r.sequential_width_ratio  # none where the control is 0 (no always-valid interval)
        assert row[WIDTH] == (f"{ratio:.1f}×" if np.isfinite(ratio) else MISSING)
        assert row["power"].startswith("underpowered") is bool(r.is_underpowered)
    # the frame has both kinds, so the flag is not constant
    assert overall["is_underpowered"].any() and not overall["is_underpowered"].all()


def test_scorecard_rows_carry_mde_width_and_the_flag(powered):
    data, out = powered
    doc = soup(out.html)
    rows = table_rows(doc, "scorecard")
    assert {"MDE now", "MDE planned", WIDTH} <= set(rows[0])
    flagged = data.today[data.today["segment_type"].isin(["overall", "platform"])
                         & data.today["is_underpowered"] & (data.today["metric"] != "request_latency_curve")]  # fmt: skip
    assert sum("underpowered" in r["verdict"] for r in rows) == len(flagged) > 0
    widths = [float(r[WIDTH].rstrip("×")) for r in rows if r[WIDTH] != MISSING]
    assert len(widths) > len(rows) // 2 and min(widths) > 1.0  # always-valid intervals are wider than fixed ones
    assert "underpowered" in out.markdown and "MDE planned" in out.markdown
    assert FORBIDDEN.search(visible_text(doc)) is None


def test_no_plan_and_no_target_show_a_dash_and_flag_nothing(fhol_results):
    """Pure sections (no render): the same frames without a plan or a target."""
    today = ReportData(
        experiment("fhol_test"), DAY, frames.with_power(fhol_results, None, None)
    ).today
    lines = power_lines(today)
    assert lines and {p.power.mde_planned for p in lines} == {p.power.target for p in lines} == {
        MISSING
    }
    assert sum(p.power.mde_now.startswith("±") for p in lines) > len(lines) // 2
    main, network = scorecard(today)
    assert not any(r.power.underpowered for r in main + network)


def test_power_facts_format():
    p = power({"mde_relative": 0.0421, "mde_relative_planned": 0.0105, "target_relative_effect": 0.02,
               "is_underpowered": np.bool_(False), "sequential_width_ratio": 2.345})  # fmt: skip
    assert (p.mde_now, p.mde_planned, p.target, p.underpowered, p.seq_width) == (
        "±4.2%", "±1.1%", "±2.0%", False, "2.3×")  # fmt: skip
    old = power({"metric": "request_latency"})
    assert (old.mde_now, old.mde_planned, old.underpowered, old.seq_width) == (MISSING,) * 2 + (
        False,
        MISSING,
    )
    assert power({"is_underpowered": None}).underpowered is False
    assert power({"is_underpowered": float("nan")}).underpowered is False
