"""The rendered report, from real stats-engine results: content, shape, and graceful gaps."""

from __future__ import annotations

from datetime import timedelta

import _report_frames as _frames
import numpy as np
import pytest
from _report_html import FORBIDDEN, find_row, png_sizes, soup, table_rows, visible_text
from conftest import DAY, experiment

from reports import IngestQuality, ReportData, render
from reports.fmt import arm_values, effect
from reports.metrics import display

QUALITY = IngestQuality(DAY.replace(day=15), DAY, 200_000, 210, 990, 1500)


@pytest.fixture(scope="module")
def fhol(fhol_report):
    return fhol_report


def test_scorecard_reads_back_the_engine_numbers(fhol):
    data, out = fhol
    doc = soup(out.html)
    rows = table_rows(doc, "scorecard")
    today = data.today
    shown = 0
    for seg in ("overall", "Windows", "Android"):
        r = today[(today["metric"] == "request_latency_p") & np.isclose(today["quantile_p"], 0.95)
                  & (today["segment_value"] == ("all" if seg == "overall" else seg))].iloc[0]  # fmt: skip
        html_row = find_row(rows, "p95 request latency", seg)
        e = effect(r)
        assert html_row["Δ"] == e.delta and html_row["Δ %"] == e.rel and html_row["95% CI"] == e.ci
        assert html_row["always-valid CI"] == e.seq_ci
        control, treatment = arm_values(r["value_control"], r["value_treatment"], display("request_latency_p"))
        assert (html_row["control"], html_row["treatment"]) == (control, treatment)
        # the seeds' shape, from the numbers themselves
        assert e.line == f"p95 request latency, {seg}: {html_row['Δ']} ({html_row['Δ %']}) {html_row['95% CI']}"
        assert html_row["95% CI"].endswith(" ms")  # units on every number
        assert html_row["verdict"].startswith("no significant difference") != bool(
            r["is_significant"]
        )
        shown += 1
    assert shown == 3
    expected_rows = today[today["segment_type"].isin(["overall", "platform"])
                          & (today["metric"] != "request_latency_curve")]  # fmt: skip
    assert len(rows) == len(expected_rows)


def test_header_arms_srm_and_quality(fhol):
    data, out = fhol
    doc = soup(out.html)
    arms = table_rows(doc, "arms")
    assert [a["arm"] for a in arms] == ["control", "fhol"]
    n = data.today[data.today["segment_type"] == "overall"]
    assert arms[0]["units"] == f"{int(n['n_control'].max()):,}"
    assert "passed" in doc.find(id="srm").get_text() and doc.find(id="srm-warning") is None
    assert doc.find(id="quality").get_text(strip=True) == (
        "Data quality (uploads 2026-06-15 … 2026-06-17): 200,000 rows read; 0.10% quarantined, "
        "0.50% duplicates, 0.75% late.")  # fmt: skip
    assert "day 3 since 2026-06-15" in doc.find(id="header").get_text(" ")


def test_every_section_is_filled_and_nothing_reads_nan(fhol):
    _, out = fhol
    doc = soup(out.html)
    text = visible_text(doc)
    assert not FORBIDDEN.search(text), FORBIDDEN.search(text)
    sizes = png_sizes(doc)
    assert len(sizes) >= 5 and all(w > 200 and h > 100 for w, h in sizes)
    for section in ("segments", "forest", "percentiles", "cumulative", "buckets", "multipath", "power"):
        node = doc.find(id=section)
        assert node is not None and node.find(class_="na") is None, section
    assert "Daily values: not available (test: not built)" in text
    percentiles = table_rows(doc, "percentile-table")
    assert [r["segment"] for r in percentiles][:3] == ["overall", "Windows", "Android"]
    assert list(percentiles[0])[1:4] == ["mean", "p1", "p5"] and list(percentiles[0])[-1] == "p99"


def test_power_line_per_metric(fhol):
    data, out = fhol
    power = table_rows(soup(out.html), "power-table")
    overall = data.today[
        (data.today["segment_type"] == "overall")
        & (data.today["metric"] != "request_latency_curve")
    ]
    assert len(power) == len(overall)
    p95 = next(p for p in power if p["metric"] == "p95 request latency")
    r = overall[
        (overall["metric"] == "request_latency_p") & np.isclose(overall["quantile_p"], 0.95)
    ].iloc[0]
    assert p95["MDE (80% power, α = 0.05)"] == effect(r).mde and p95[
        "MDE (80% power, α = 0.05)"
    ].startswith("±")


def test_multipath_table_in_the_seed_shape(fhol):
    data, out = fhol
    doc = soup(out.html)
    rows = table_rows(doc, "multipath-table")
    close = {r["arm"]: r for r in rows if r["measure"] == "close delay (ms)"}
    assert set(close) == {"control", "fhol", "Δ fhol vs control"}
    t = data.today
    p99 = t[
        (t["metric"] == "close_delay_p")
        & (t["segment_type"] == "overall")
        & np.isclose(t["quantile_p"], 0.99)
    ].iloc[0]
    assert close["fhol"]["p99"] == f"{p99['value_treatment']:,.0f}"
    assert close["control"]["avg"] != "–" and all(
        close["fhol"][c] != "–" for c in ("p50", "p90", "p95", "p99")
    )
    reinjection = doc.find(id="reinjection").get_text()
    assert "fhol 2.0" in reinjection and "control 0.00%" in reinjection


def test_a_multipath_measure_without_positive_values_is_drawn_on_a_linear_axis(monkeypatch):
    """A measure whose values are all zero or missing (no path ever re-injected, say) cannot be
    log-scaled: its panel is linear, drawn without a warning; a positive measure stays on a log axis."""
    import warnings

    from reports import multipath

    zeros, missing = [0.0] * len(multipath.COLUMNS), [float("nan")] * len(multipath.COLUMNS)
    series = {("zero", "control"): zeros, ("zero", "fhol"): missing, ("srtt", "control"): [10.0, 8, 12, 15, 20]}
    panels = []
    subplots = multipath.plt.subplots

    def keep_axes(*args, **kwargs):
        fig, axes = subplots(*args, **kwargs)
        panels.extend(axes[0])
        return fig, axes

    monkeypatch.setattr(multipath.plt, "subplots", keep_axes)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        images = multipath._plot(series, {}, ["control", "fhol"])
    assert len(images) == 1
    assert [ax.get_yscale() for ax in panels] == ["log", "linear"]  # measures sorted: srtt, zero


def test_guardrail_breach_comes_first(fhol_results):
    res = fhol_results.copy()
    # make mean request latency (a guardrail) a significant regression on Windows
    sel = (res["metric"] == "request_latency") & (res["segment_value"] == "Windows")
    res.loc[sel, ["is_significant", "delta_abs", "p_value_adjusted"]] = [True, 25.0, 0.001]
    out = render(ReportData(experiment("fhol_test"), DAY, res))
    doc = soup(out.html)
    first = doc.find("table", id="scorecard").find("tbody").find("tr")
    assert "breach" in first["class"] and first["data-metric"] == "request_latency"
    assert (
        doc.find("ul", class_="breaches")
        .get_text()
        .startswith("mean request latency, Windows: +25")
    )


def test_aa_says_no_significant_difference(aa_results):
    out = render(ReportData(experiment("aa_test", arms=("control", "same")), DAY, aa_results))
    doc = soup(out.html)
    rows = table_rows(doc, "scorecard")
    ns = [r["verdict"].startswith("no significant difference") for r in rows]
    assert len(rows) >= 30 and sum(ns) >= 0.95 * len(rows)
    assert doc.find(id="no-verdict") is not None and doc.find(id="health")["data-state"] == "ok"
    if all(ns):
        assert (
            doc.find(id="summary-line")
            .get_text()
            .startswith("No significant difference on any of the")
        )
    assert "No significant difference" in out.markdown or not all(ns)


def test_srm_turns_the_report_into_a_warning(srm_results):
    out = render(ReportData(experiment("srm_test"), DAY, srm_results))
    doc = soup(out.html)
    first = doc.body.find(True)
    assert first["id"] == "health" and "failed" in first["class"] and "Sample ratio mismatch" in first.get_text()
    assert first.find(attrs={"data-check": "srm"})["class"] == ["check", "failed"]
    assert "60" in first.get_text() or "59" in first.get_text() or "61" in first.get_text()
    assert doc.title.get_text().startswith("⚠ SRM")
    assert "srm-failed" in doc.body["class"]
    assert out.markdown.lstrip().startswith("**⚠ SAMPLE RATIO MISMATCH")
    assert not out.trustworthy


def test_missing_marts_and_values_degrade_gracefully(fhol_results):
    thin = fhol_results[fhol_results["segment_type"].isin(["overall", "platform"])
                        & fhol_results["metric"].isin(["request_latency", "rebuffers_per_playback"])].copy()  # fmt: skip
    today = thin.index[thin["as_of_date"] == DAY]
    thin.loc[
        today[:3], ["value_control", "delta_rel", "ci_rel_lower", "mde_rel", "p_value_adjusted"]
    ] = np.nan
    out = render(
        ReportData(experiment("fhol_test"), DAY, thin, missing={"ingest_audit": "table absent"})
    )
    doc = soup(out.html)
    text = visible_text(doc)
    assert not FORBIDDEN.search(text), FORBIDDEN.search(text)
    assert "Data quality: not available (table absent)." in text
    assert "Percentile-delta curve: not available" in text
    assert "Effect by RTT, loss and bandwidth bucket: not available" in text
    assert doc.find(id="multipath") is None
    assert len(table_rows(doc, "scorecard")) == (thin["as_of_date"] == DAY).sum()
    assert not FORBIDDEN.search(out.markdown)


def test_markdown_summary(fhol):
    _, out = fhol
    md = out.markdown
    assert md.startswith("# QUIC+FHOL vs QUIC — 2026-06-17")
    assert "| p95 request latency | overall |" in md
    assert "Sample ratio check passed" in md and "Data quality (uploads" in md
    assert not FORBIDDEN.search(md)


POWER_COLUMNS = ["mde_relative", "mde_relative_planned", "target_relative_effect", "is_underpowered",
                 "sequential_width_ratio"]  # fmt: skip


def test_older_results_without_the_power_columns_still_render(fhol_results):
    """Results from before the power columns: no MDE-at-plan, width or flag columns, no gaps."""
    older = fhol_results.drop(columns=[c for c in POWER_COLUMNS if c in fhol_results.columns])
    data = ReportData(experiment("fhol_test", title="QUIC+FHOL vs QUIC"), DAY, older, quality=QUALITY,
                      missing={"metric_values_daily": "test: not built"})  # fmt: skip
    out = render(data)
    assert "mde_relative" not in data.results.columns
    doc = soup(out.html)
    assert not set(table_rows(doc, "power-table")[0]) & {
        "MDE at the planned size", "target effect", "always-valid / fixed width", "power"}  # fmt: skip
    assert "MDE now" not in set(table_rows(doc, "scorecard")[0])
    assert "MDE planned" not in out.markdown and "underpowered" not in out.markdown


def test_qlog_section_per_arm_and_network_condition(tmp_path):
    """qlog metrics (registry group qlog) get their own section: overall and every network bucket,
    with the engine's CIs; a report without them has no such section."""
    table = _frames.sufficient_stats("qlog_test", n_units=600, days=1, qlog=True, seed=21)
    results = _frames.results(table, {"qlog_test": {"control": 0.5, "fhol": 0.5}})
    out = render(ReportData(experiment=experiment("qlog_test"), day=DAY - timedelta(days=2), results=results))
    section = soup(out.html).find(id="qlog")
    assert section is not None and "qlog server loss rate" in section.get_text()
    rows = table_rows(soup(out.html), "qlog-scorecard")
    segments = {r["segment"] for r in rows}
    assert {"overall"} < segments and len(rows) == 2 * (1 + 4 + 3 + 3)  # overall, RTT, loss, bandwidth
    overall = find_row(rows, "qlog server loss rate", "overall")
    want = results[(results["metric"] == "qlog_loss_rate_server") & (results["segment_type"] == "overall")].iloc[0]
    assert overall["control"] == arm_values(want.value_control, want.value_treatment, display("qlog_loss_rate_server"))[0]
    assert "Real QUIC stacks (qlog)" in out.markdown
    plain = render(ReportData(experiment=experiment("qlog_test"), day=DAY - timedelta(days=2),
                              results=results[~results["metric"].str.startswith("qlog_")]))
    assert soup(plain.html).find(id="qlog") is None and "(qlog)" not in plain.markdown
