"""Numbers in the seeds' shape, and never a "nan"."""

from __future__ import annotations

import math

import pytest

from reports.fmt import (
    MISSING,
    arm_values,
    bucket_order,
    decimals_for,
    effect,
    number,
    percent,
    segment_label,
    segment_rank,
    value_text,
    verdict,
)
from reports.metrics import display, metric_label, percentile_name


def row(**kw):
    base = {"metric": "request_latency_p", "quantile_p": 0.95, "segment_type": "platform",
            "segment_value": "Windows", "delta_abs": 98.2, "ci_abs_lower": 61.3, "ci_abs_upper": 135.4,
            "delta_rel": 0.0304, "ci_rel_lower": 0.019, "ci_rel_upper": 0.041,
            "seq_ci_abs_lower": 40.0, "seq_ci_abs_upper": 160.0, "seq_ci_rel_lower": 0.012,
            "seq_ci_rel_upper": 0.05, "mde_abs": 52.0, "mde_rel": 0.016}  # fmt: skip
    return base | kw


def test_seed_line_p95_windows():
    e = effect(row())
    assert e.line == "p95 request latency, Windows: +98 ms (+3.0%) [+61, +135] ms"
    assert e.seq_ci == "[+40, +160] ms"
    assert e.rel_ci == "[+1.9%, +4.1%]"
    assert e.mde == "±52 ms (±1.6%)"


def test_small_relative_deltas_keep_two_decimals():
    e = effect(row(metric="search_latency", quantile_p=None, delta_abs=1.3, ci_abs_lower=-0.2, ci_abs_upper=2.8,
                   delta_rel=0.0016, segment_type="overall", segment_value="all"))  # fmt: skip
    assert e.line == "mean search latency, overall: +1.3 ms (+0.16%) [-0.2, +2.8] ms"


def test_rates_are_percent_and_deltas_percentage_points():
    d = display("search_abandonment_rate")
    assert (d.unit, d.scale, d.abs_unit) == ("%", 100.0, "pp")
    assert value_text(0.0523, d) == "5.23%"
    e = effect(row(metric="search_abandonment_rate", quantile_p=None, delta_abs=0.003, ci_abs_lower=0.001,
                   ci_abs_upper=0.005, delta_rel=0.057))  # fmt: skip
    assert e.delta == "+0.30 pp" and e.ci == "[+0.10, +0.50] pp"


def test_a_control_of_zero_has_no_relative_delta_in_the_line():
    e = effect(row(metric="hol_blocked_time_per_request", quantile_p=None, segment_type="overall",
                   segment_value="all", delta_abs=1.83, ci_abs_lower=1.68, ci_abs_upper=1.99,
                   delta_rel=math.inf, ci_rel_lower=math.nan, ci_rel_upper=math.nan))  # fmt: skip
    assert e.line == "HoL-blocked time per request, overall: +1.83 ms [+1.68, +1.99] ms"


def test_arm_values_share_their_decimals():
    """Both arms' values beside each other have one number of decimals (three significant digits
    of the larger): never "792" beside "782.2"."""
    ms = display("request_latency")
    assert arm_values(792.0, 782.2, ms) == ("792 ms", "782 ms")
    assert arm_values(99.5, 100.2, ms) == ("100 ms", "100 ms")
    assert arm_values(9.96, 10.4, ms) == ("10.0 ms", "10.4 ms")
    assert arm_values(0.0, 1.834, ms) == ("0.00 ms", "1.83 ms")
    assert arm_values(0.0523, 0.0561, display("search_abandonment_rate")) == ("5.23%", "5.61%")
    assert arm_values(math.nan, 3.0, ms) == (MISSING, "3.00 ms")


@pytest.mark.parametrize("bad", [None, math.nan, math.inf, "x"])
def test_missing_numbers_are_dashes(bad):
    assert number(bad) == MISSING and percent(bad) == MISSING
    e = effect(row(delta_abs=bad, ci_abs_lower=bad, ci_abs_upper=bad, delta_rel=bad, ci_rel_lower=bad,
                   seq_ci_abs_lower=bad, seq_ci_rel_lower=bad, mde_abs=bad))  # fmt: skip
    for text in (e.delta, e.rel, e.ci, e.seq_ci, e.rel_ci, e.seq_rel_ci, e.mde):
        assert text == MISSING
    assert "nan" not in e.line.lower() and "none" not in e.line.lower()


def test_decimals_follow_interval_width():
    assert decimals_for(37) == 0 and decimals_for(3.7) == 1 and decimals_for(0.37) == 2
    assert number(1234567.8) == "1,234,568" and number(0.0) == "0.0"
    assert number(-0.01, 1, signed=True) == "0.0"  # no "-0.0"


def test_labels_and_segments():
    assert percentile_name(0.95) == "p95" and percentile_name(0.999) == "p99.9"
    assert metric_label("close_delay_p", 0.5) == "p50 close delay"
    assert metric_label("some_new_metric") == "some new metric"
    assert segment_label("overall", "all") == "overall"
    assert segment_label("platform×rtt_bucket", "Windows|100-200ms") == "Windows, 100-200ms"


def test_orders():
    assert sorted(["200ms+", "50-100ms", "0-50ms", "100-200ms"], key=bucket_order) == [
        "0-50ms", "50-100ms", "100-200ms", "200ms+"]  # fmt: skip
    assert sorted(["0.5-2%", "2%+", "<0.5%"], key=bucket_order) == ["<0.5%", "0.5-2%", "2%+"]
    ranks = sorted([("platform", "Linux"), ("platform", "Windows"), ("overall", "all"), ("platform", "iOS")],
                   key=lambda s: segment_rank(*s))  # fmt: skip
    assert [v for _, v in ranks] == ["all", "Windows", "iOS", "Linux"]


def test_verdict_uses_the_metric_direction():
    assert verdict(True, 5.0, "request_latency_p") == "worse"
    assert verdict(True, -5.0, "request_latency_p") == "better"
    assert verdict(True, -5.0, "mean_client_bandwidth") == "worse"
    assert verdict(True, 1.0, "unknown_metric") == "higher"
    assert verdict(False, 5.0, "request_latency_p") == "no significant difference"
