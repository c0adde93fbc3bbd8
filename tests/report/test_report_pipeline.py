"""Reports from the real pipeline, read back: the run's shared pipeline lake
(tests/pipeline_lake.py: one simulated fleet with four experiments, two days through
``quicexp.app.daily.run_day``). The numbers in the HTML are compared with gold.experiment_results.
"""

from __future__ import annotations

from datetime import date, timedelta

import numpy as np
import pytest
from _report_html import (
    assert_on_first_screen,
    assert_readable,
    browser_facts,
    first_screen,
    soup,
    table_rows,
    visible_text,
)

import jobs.report
from quicexp.errors import InputDataError
from reports.decision import views
from reports.fmt import arm_values, effect
from reports.health import health
from reports.metrics import display
from reports.revision import declared_roles, publication, revisions
from tests.pipeline_lake import FHOL

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

#: seed 000's metrics (quantile p or None) as the mart contract names them
SEED_000 = [("request_latency_p", 0.5), ("request_latency_p", 0.95), ("search_latency", None),
            ("mtbr", None), ("rebuffers_per_playback", None), ("mean_client_bandwidth", None)]  # fmt: skip


@pytest.fixture(scope="module")
def pipeline(pipeline_lake, spark):
    settings, day = pipeline_lake.settings, pipeline_lake.last_day
    results = spark.table(f"{settings.gold_schema}.experiment_results").toPandas()
    results = results[results["as_of_date"].astype(str) == day.isoformat()]
    reports = {p.parent.name: p for p in pipeline_lake.outcomes[-1].reports}
    return settings, day, results, reports


def _rows(results, exp_id):
    r = results[
        (results["experiment_id"] == exp_id) & results["segment_type"].isin(["overall", "platform"])
    ]
    return r[r["metric"] != "request_latency_curve"]


def _html_row(rows, metric, label, segment):
    hits = [
        r
        for r in rows
        if r["_metric"] == metric and r["metric"] == label and r["segment"] == segment
    ]
    assert len(hits) == 1, (metric, label, segment, len(hits))
    return hits[0]


def _scorecard(html):
    doc = soup(html)
    rows = table_rows(doc, "scorecard")
    metrics = [
        tr["data-metric"] for tr in doc.find("table", id="scorecard").find("tbody").find_all("tr")
    ]
    return doc, [r | {"_metric": m} for r, m in zip(rows, metrics, strict=True)]


def test_every_experiment_has_a_report(pipeline):
    _, day, _, reports = pipeline
    assert set(reports) == {FHOL, "report_aa", "report_srm", "report_mp"}
    for exp_id, path in reports.items():
        assert path.name == f"{day}.html" and path.with_suffix(".md").exists(), exp_id


def test_fhol_report_shows_the_pipeline_numbers_in_the_seeds_shape(pipeline):
    _, _, results, reports = pipeline
    doc, html_rows = _scorecard(reports[FHOL].read_text())
    expected = _rows(results, FHOL)
    assert len(html_rows) == len(expected) > 0
    for r in expected.itertuples(index=False):
        e = effect(r)
        h = _html_row(html_rows, r.metric, e.label, e.segment)
        assert (h["Δ"], h["Δ %"], h["95% CI"], h["always-valid CI"]) == (
            e.delta,
            e.rel,
            e.ci,
            e.seq_ci,
        )
        assert (h["control"], h["treatment"]) == arm_values(r.value_control, r.value_treatment, display(r.metric))
        rel = "" if h["Δ %"] == "–" else f" ({h['Δ %']})"  # no relative delta over a control of 0
        assert f"{e.label}, {e.segment}: {h['Δ']}{rel} {h['95% CI']}" == e.line
    present = {
        (m, None if np.isnan(q) else round(q, 4))
        for m, q in zip(expected["metric"], expected["quantile_p"], strict=True)
    }
    pending = [m for m in SEED_000 if m not in present]
    print(
        f"seed 000 metrics in the report: {len(SEED_000) - len(pending)}/{len(SEED_000)}; pending mart: {pending}"
    )
    for metric, q in SEED_000:
        if (metric, q) in present:
            for platform in ("Windows", "Android"):
                label = effect(
                    {"metric": metric, "quantile_p": q, "segment_type": "platform"}
                ).label
                assert _html_row(html_rows, metric, label, platform)["Δ"] != "–"
    assert not table_rows(doc, "arms")[0]["units"] == "–"


def test_multipath_report(pipeline):
    _, _, results, reports = pipeline
    doc = soup(reports["report_mp"].read_text())
    mp = results[results["experiment_id"] == "report_mp"]
    assert {"close_delay_p", "srtt_p", "reinjection_overhead"} <= set(mp["metric"])
    rows = {(r["arm"], r["measure"]): r for r in table_rows(doc, "multipath-table")}
    p95 = mp[
        (mp["metric"] == "close_delay_p")
        & (mp["segment_type"] == "overall")
        & np.isclose(mp["quantile_p"], 0.95)
    ].iloc[0]
    assert rows[("single_path", "close delay (ms)")]["p95"] == f"{p95['value_control']:,.0f}"
    assert rows[("reinjection", "close delay (ms)")]["p95"] == f"{p95['value_treatment']:,.0f}"
    assert "reinjection" in doc.find(id="reinjection").get_text()


def test_aa_report_says_no_significant_difference(pipeline):
    _, _, results, reports = pipeline
    doc, html_rows = _scorecard(reports["report_aa"].read_text())
    verdicts = [r["verdict"] for r in html_rows]
    assert len(verdicts) == len(_rows(results, "report_aa")) > 0
    assert sum(v.startswith("no significant difference") for v in verdicts) >= 0.9 * len(verdicts)
    assert "Sample ratio check passed" in visible_text(doc) and doc.find(id="srm-warning") is None


def test_srm_report_leads_with_the_warning(pipeline):
    _, _, _, reports = pipeline
    doc = soup(reports["report_srm"].read_text())
    warning = doc.body.find(True)
    assert warning["id"] == "health" and "Sample ratio mismatch" in warning.get_text()
    arms = {a["arm"]: a for a in table_rows(doc, "arms")}
    assert arms["control"]["configured split"] == "50.0%"
    assert 57 <= float(arms["control"]["observed split"].rstrip("%")) <= 63
    assert (
        reports["report_srm"].with_suffix(".md").read_text().startswith("**⚠ SAMPLE RATIO MISMATCH")
    )


def test_fhol_report_leads_with_the_lakes_decision(pipeline, spark):
    """The verdict, a card per declared success metric and guardrail, and the mechanism check,
    with the numbers of gold.experiment_decisions and gold.experiment_decision_tests."""
    settings, day, results, reports = pipeline
    gold = settings.gold_schema
    verdicts = spark.table(f"{gold}.experiment_decisions").where(f"experiment_id = '{FHOL}'").toPandas()
    tests = spark.table(f"{gold}.experiment_decision_tests").where(f"experiment_id = '{FHOL}'").toPandas()
    today = verdicts[verdicts["as_of_date"].astype(str) == day.isoformat()]
    (v,) = views(today, tests)
    doc = soup(reports[FHOL].read_text())
    box = doc.find(id=f"verdict-{v.treatment_arm}")
    assert box["data-verdict"] == v.verdict and v.headline in box.get_text()
    cards = doc.find(id="cards").find_all(class_="card")
    declared = [c for c in v.cards if c.role != "mechanism"]
    assert [c["data-metric"] for c in cards] == [c.key for c in declared] and len(declared) == 7
    for card, want in zip(cards, declared, strict=True):
        text = card.get_text(" ")
        assert f"control {want.control}" in text and want.treatment in text and want.interval_text in text
        assert card.find(class_="card-arm")["data-status"] == want.status
    assert "HoL-blocked time per request" in doc.find(class_="mechanism").get_text()
    # the banner is the lake's health: its rows when the results step writes them, else SRM
    table = f"{gold}.experiment_health"
    rows = (spark.table(table).where(f"experiment_id = '{FHOL}' and as_of_date = date'{day}'").toPandas()
            if spark.catalog.tableExists(table) else None)  # fmt: skip
    expected = health(results[results["experiment_id"] == FHOL], rows)
    banner = doc.find(id="health")
    assert banner["data-state"] == expected.state
    assert [c["data-check"] for c in banner.find_all(class_="check")] == [g.name for g in expected.groups]


def test_a_revised_day_is_marked_in_the_next_days_report(pipeline, spark):
    """Day 2's run recomputes day 1 with the late uploads that landed on day 2: wherever day 1's
    numbers in the lake now differ from what its report published, day 2's report says so."""
    settings, day, _, reports = pipeline
    gold = settings.gold_schema
    published = spark.table(f"{gold}.experiment_report_published").toPandas()
    assert {(e, str(d)) for e, d in zip(published["experiment_id"], published["as_of_date"], strict=True)} == {
        (e, str(d)) for e in reports for d in (day - timedelta(days=1), day)}  # fmt: skip
    counted = {}
    for exp_id, path in reports.items():
        results = spark.table(f"{gold}.experiment_results").where(
            f"experiment_id = '{exp_id}' and segment_type = 'overall'").toPandas()  # fmt: skip
        decided, tests = (spark.table(f"{gold}.{t}").where(f"experiment_id = '{exp_id}'").toPandas()
                          for t in ("experiment_decisions", "experiment_decision_tests"))  # fmt: skip
        current = publication(results, decided, declared_roles(tests))
        expected = revisions(published[published["experiment_id"] == exp_id], current)
        counted[exp_id] = [(str(r.as_of_date), len(r.changes)) for r in expected]
        mark = soup(path.read_text()).find(id="revisions-earlier")
        assert (mark is not None) == bool(expected), exp_id
        for r in expected:
            assert str(r.as_of_date) in mark.get_text() and r.changes[0].current in mark.get_text(), exp_id
    print(f"revised as-of dates per experiment: {counted}")


def test_reports_read_well_in_chromium(pipeline, browser):
    _, _, _, reports = pipeline
    screen = first_screen(browser, reports[FHOL])  # the decision at 1,400 x 900, no horizontal scroll
    assert_on_first_screen(screen, "health", "verdicts", "cards", "mechanism")
    assert len(screen["cards"]) == 7
    assert any("HoL-blocked time per request" in p for p in screen["panels"]), screen["panels"]
    browser.save_screenshot(str(reports[FHOL].with_name(f"{reports[FHOL].stem}_first_screen.png")))
    for exp_id in (FHOL, "report_srm"):
        shot = reports[exp_id].with_suffix(".png")
        facts = browser_facts(browser, reports[exp_id], screenshot=shot)
        assert_readable(facts)
        assert facts["first"] == ("health" if exp_id == "report_srm" else "header")
        print(f"screenshot: {shot}")


def test_reports_are_in_the_lake_once_per_day(pipeline, spark):
    settings, day, _, reports = pipeline
    jobs.report.run(spark, settings, day, FHOL)  # a re-run replaces, never duplicates
    table = spark.table(f"{settings.gold_schema}.experiment_reports").toPandas()
    today = table[table["as_of_date"].astype(str) == day.isoformat()]
    assert sorted(today["experiment_id"]) == sorted(reports)
    srm = today.set_index("experiment_id").loc["report_srm"]
    assert not srm["is_trustworthy"] and srm["html"].startswith("<!doctype html>")


def test_a_day_without_results_is_a_one_line_error(pipeline, spark):
    settings = pipeline[0]
    with pytest.raises(
        InputDataError, match=r"^no results for experiment fhol_2026_06 on 2026-07-01"
    ) as err:
        jobs.report.run(spark, settings, date(2026, 7, 1), FHOL)
    assert "\n" not in str(err.value)
