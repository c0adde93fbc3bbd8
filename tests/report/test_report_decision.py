"""The decision screen's logic, without a JVM: cards from the real decision layer's tests, the
interval bar, the health banner, revisions, any number of arms and a control of 0."""

from __future__ import annotations

import math
import re
from datetime import timedelta

import numpy as np
import pandas as pd
import pytest
from _report_html import FORBIDDEN, soup, table_rows, visible_text
from conftest import DAY

from reports.bars import Mark, interval_svg
from reports.decision import metric_cards, reason_text, view, views
from reports.health import health
from reports.plots import is_small, scale_for
from reports.revision import publication, revisions


def _today(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[pd.to_datetime(frame["as_of_date"]) == pd.Timestamp(DAY)]


@pytest.fixture(scope="module")
def fhol_view(fhol_decisions):
    (v,) = views(_today(fhol_decisions.verdicts), fhol_decisions.tests, {"request_latency": 0.01})
    return v


def test_cards_carry_the_tests_bounds_on_their_own_side(fhol_view, fhol_decisions):
    """Each test's bound sits on the side it bounds (superiority of a "decrease" metric bounds
    the lift from above), in percent; a side without a bound is open (±inf)."""
    v = fhol_view
    assert [c.role for c in v.cards] == ["success", "guardrail", "guardrail", "mechanism"]
    tests = _today(fhol_decisions.tests).set_index(["metric", "test"])
    latency = v.success[0]
    assert latency.high == pytest.approx(tests.loc[("request_latency", "superiority"), "bound"] * 100)
    assert latency.low == pytest.approx(tests.loc[("request_latency", "deterioration"), "bound"] * 100)
    assert latency.minimum_effect == pytest.approx(-1.0) and latency.minimum_text == "-1.0%"
    p95 = next(c for c in v.guardrails if c.metric == "request_latency_p")
    assert p95.threshold == pytest.approx(2.0) and p95.threshold_text == "+2.0%"
    hol = v.mechanism[0]  # HoL-blocked time: 0 in the control, read on the absolute scale
    assert hol.absolute and hol.axis_unit == "ms" and hol.relative == "–"
    assert hol.low == pytest.approx(tests.loc[("hol_blocked_time_per_request", "treatment_active"), "bound"])
    assert hol.high == math.inf and hol.interval_text.startswith("≥ +")
    assert hol.status == "active" and hol.tone == "good"
    passed = tests.loc[("request_latency", "superiority"), "passed"]
    assert (latency.status == "better") == bool(passed)


def _test_rows(metric: str, better: str, delta_rel: float, passed: str) -> pd.DataFrame:
    rows = []
    for test, bound in (("superiority", delta_rel + 0.01), ("deterioration", delta_rel - 0.01)):
        rows.append({"experiment_id": "e", "as_of_date": DAY, "treatment_arm": "t", "control_arm": "c",
                     "role": "success", "metric": metric, "quantile_p": np.nan, "test": test, "better": better,
                     "threshold": 0.0, "threshold_scale": "relative", "value_control": 100.0,
                     "value_treatment": 100.0 * (1 + delta_rel), "delta_abs": 100.0 * delta_rel,
                     "delta_rel": delta_rel, "bound": bound if better == "increase" else -bound,
                     "is_informative": True, "passed": test == passed})  # fmt: skip
    return pd.DataFrame(rows)


def test_colour_is_the_metrics_direction_never_the_sign():
    """The same -5% is good for a latency and bad for a bandwidth."""
    verdict = pd.Series({"experiment_id": "e", "treatment_arm": "t", "control_arm": "c", "as_of_date": DAY,
                         "verdict": "keep_running", "reasons": []})  # fmt: skip
    faster = view(verdict, _test_rows("request_latency", "decrease", -0.05, "superiority")).cards[0]
    slower = view(verdict, _test_rows("mean_client_bandwidth", "increase", -0.05, "deterioration")).cards[0]
    assert (faster.status, faster.tone) == ("better", "good")
    assert (slower.status, slower.tone) == ("worse", "bad")
    assert faster.relative == slower.relative == "-5.0%"


def test_reasons_in_words():
    assert reason_text("gate_failed:srm") == "the sample ratio (SRM) check failed"
    assert reason_text("guardrail_inferior:request_latency_p@p95") == "p95 request latency is worse beyond its margin"
    assert reason_text("success_not_shown:request_latency") == "mean request latency not yet shown better"
    assert reason_text("treatment_active:hol_blocked_time_per_request") == (
        "HoL-blocked time per request moved as expected (treatment on)")


def test_the_bar_clips_with_arrows_and_never_without():
    marks = [Mark(0.0, "0", "zero"), Mark(2.0, "margin +2.0%", "margin")]
    wide = interval_svg(-math.inf, 50.0, 5.0, marks, "neutral", "%")
    assert 'data-clipped="low high"' in wide and wide.count('class="clip"') == 2
    inside = interval_svg(-1.0, 3.0, 1.0, marks, "good", "%")
    assert 'data-clipped=""' in inside and 'class="clip"' not in inside and "margin +2.0%" in inside
    xs = [float(x) for x in re.findall(r'<rect class="ci" x="([-\d.]+)"', inside)]
    assert xs and 10 <= xs[0] <= 290  # drawn within the axis


def test_health_reads_srm_from_the_results_and_every_row_of_the_health_table(fhol_results, srm_results):
    today, srm_today = _today(fhol_results), _today(srm_results)
    plain = health(today)
    assert [c.name for c in plain.checks] == ["srm"] and plain.ok and plain.state == "ok"
    assert not health(srm_today).ok and health(srm_today).failed_gates[0].name == "srm"
    table = pd.DataFrame({"check": ["srm", "exposure_balance", "late_data_share"],
                          "statistic": [1.2, 8.0, 0.07], "p_value": [0.27, 0.004, np.nan],
                          "threshold": [0.001, 0.01, 0.05], "passed": [True, False, False],
                          "is_gate": [True, True, False]})  # fmt: skip
    h = health(today, table)
    assert [c.name for c in h.checks] == ["exposure_balance", "late_data_share", "srm"]  # failed gate first
    assert [c.state for c in h.checks] == ["failed", "warning", "ok"] and h.summary == "failed: exposure balance"
    assert h.checks[0].detail == "p = 0.004, threshold 0.01"
    # stats.health's shape: a row per platform, a detail of its own; each check named once
    platforms = pd.DataFrame({"check": "srm_platform", "segment": [f"platform={p}" for p in ("Windows", "Linux")],
                              "p_value": [0.4, 1e-5], "threshold": 0.0005, "passed": [True, False],
                              "is_gate": True, "detail": ["control 1,000, fhol 990", "control 60, fhol 20"]})  # fmt: skip
    h = health(today, platforms)
    assert [(g.name, g.state, g.detail) for g in h.groups] == [
        ("srm_platform", "failed", "2 rows, 1 failing"), ("srm", "ok", "χ² p = 0.315; a mismatch below 0.001")]
    assert h.failed_gates[0].full_label == "sample ratio per platform (Linux)"
    assert h.failed_gates[0].detail == "control 60, fhol 20, p = 1.0e-05, threshold 0.0005"


def test_revisions_compare_what_was_published_with_the_lake(fhol_results, fhol_decisions):
    today, verdicts = _today(fhol_results), _today(fhol_decisions.verdicts)
    published = publication(today, verdicts).assign(published_at=pd.Timestamp("2026-06-17 06:30"))
    current = publication(fhol_results, fhol_decisions.verdicts)
    assert revisions(published, current) == []
    noise = current.assign(delta_abs=current["delta_abs"] * (1 + 1e-9))  # summation order, not a revision
    assert revisions(published, noise) == []
    later = current.copy()
    p95 = (later["item"] == "request_latency_p@p95") & (pd.to_datetime(later["as_of_date"]) == pd.Timestamp(DAY))
    later.loc[p95, ["delta_abs", "delta_rel"]] = later.loc[p95, ["delta_abs", "delta_rel"]].to_numpy() * 1.5
    later.loc[later["item"] == "verdict", "verdict"] = "rollback"
    (r,) = revisions(published, later)
    assert str(r.as_of_date) == DAY.isoformat() and r.verdict_changed and r.published_text == "2026-06-17 06:30 UTC"
    first, second = r.changes
    assert first.line == "verdict (fhol): Keep running → Roll back"
    assert second.label == "p95 request latency" and second.published != second.current
    old = published[published["item"] == "request_latency_p@p95"].iloc[0]
    assert f"({old['delta_rel'] * 100:+.1f}%)" in second.published


def test_the_report_leads_with_the_decision(fhol_report, fhol_decisions, fhol_published):
    _, out = fhol_report
    doc = soup(out.html)
    decision = doc.find(id="decision")
    (verdict,) = decision.find_all(class_="verdict-box")
    v = views(_today(fhol_decisions.verdicts), fhol_decisions.tests)[0]
    assert verdict["data-verdict"] == v.verdict and v.headline in verdict.get_text()
    cards = decision.find_all(class_="card")
    assert [(c["data-role"], c["data-metric"]) for c in cards] == [
        ("success", "request_latency"), ("guardrail", "request_latency_p@p95"), ("guardrail", "rebuffers_per_playback")]
    for card, want in zip(cards, v.success + v.guardrails, strict=True):
        assert card.find(class_="card-arm")["data-status"] == want.status
        assert f"Δ {want.delta_text}" in card.get_text(" ") and want.interval_text in card.get_text(" ")
        assert card.find("svg", class_="bar") is not None
    assert "minimum effect -1.0%" in cards[0].get_text(" ")
    assert "HoL-blocked time per request" in decision.find(class_="mechanism").get_text()
    # the day's own numbers were revised since its report was published: both values shown
    mark = " ".join(doc.find(id="revision").get_text(" ").split())
    old = fhol_published[fhol_published["item"] == "request_latency"].iloc[0]
    assert mark.startswith("⟲ Revised since published (2026-06-17 06:30 UTC)")
    assert f"({old['delta_rel'] * 100:+.1f}%) →" in mark
    assert doc.find("span", class_="rev-badge") is not None
    # the declared metrics by segment (with HoL-blocked time, absolute), and drill-downs per metric
    panels = [img["data-panels"] for img in doc.find(id="segments").find_all("img")]
    assert panels == ["success: mean request latency | guardrail: p95 request latency | "
                      "guardrail: rebuffers per playback | mechanism: HoL-blocked time per request"]
    drill = table_rows(doc, "segments-request_latency")
    assert [r["segment"] for r in drill][:3] == ["overall", "Windows", "Android"] and len(drill) == 16
    assert any("small segment" in r["verdict"] for r in drill)  # Linux: 73 units in an arm
    cumulative = doc.find(id="cumulative").find("img")["data-panels"]
    assert cumulative.startswith("mean request latency | p95 request latency | rebuffers per playback | "
                                 "HoL-blocked time per request (absolute: control is 0)")
    # the exploratory metrics and the full table are folded
    assert doc.find(id="exploratory").name == "details" and doc.find(id="full-table-details").name == "details"
    assert "request_latency" not in doc.find(id="exploratory").find("img")["data-panels"]
    assert not FORBIDDEN.search(visible_text(doc)) and not FORBIDDEN.search(out.markdown)
    assert "**Keep running** — fhol vs control, day 3 of 14" in out.markdown and "⟲ Revised" in out.markdown


def test_small_segments_and_a_control_of_zero(fhol_results):
    today = _today(fhol_results)
    linux = today[(today["segment_value"] == "Linux") & (today["metric"] == "request_latency")].iloc[0]
    overall = today[(today["segment_type"] == "overall") & (today["metric"] == "request_latency")].iloc[0]
    assert is_small(linux) and not is_small(overall)
    hol = today[today["metric"] == "hol_blocked_time_per_request"]
    assert (hol["value_control"] == 0).all()
    assert not scale_for("hol_blocked_time_per_request", hol).relative
    assert scale_for("hol_blocked_time_per_request", hol).axis == "Δ (ms)"
    assert scale_for("request_latency", today[today["metric"] == "request_latency"]).axis == "Δ (%)"


def test_three_arms_render_each_treatment_against_control(three_arm_report):
    """Two treatment arms (segment values repeat once per arm): a verdict each, both on every
    card, the network-condition chart drawn (it crashed with duplicate labels)."""
    data, out = three_arm_report
    doc = soup(out.html)
    verdicts = doc.find(id="decision").find_all(class_="verdict-box")
    assert [v["data-arm"] for v in verdicts] == ["fhol", "fhol_x2"]
    for card in doc.find_all(class_="card"):
        assert [a["data-arm"] for a in card.find_all(class_="card-arm")] == ["fhol", "fhol_x2"]
    assert doc.find(id="buckets").find("img") is not None
    cards = metric_cards(views(data.on_day(data.decisions), data.decision_tests))
    assert len(cards) == 4 and all(len(c.arms) == 2 for c in cards)
    assert "fhol_x2 vs control" in out.markdown
    assert not FORBIDDEN.search(visible_text(doc))
    earlier = data.day - timedelta(days=1)
    assert earlier.isoformat() in doc.find("footer").get_text()
