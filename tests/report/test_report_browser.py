"""The report as a person sees it: rendered by headless Chromium, checked through the DOM."""

from __future__ import annotations

from _report_html import assert_on_first_screen, assert_readable, browser_facts, first_screen
from conftest import DAY, experiment
from PIL import Image

from reports import ReportData, render


def _page(tmp_path, name: str, html: str):
    page = tmp_path / f"{name}.html"
    page.write_text(html, encoding="utf-8")
    return page


def test_fhol_report_in_chromium(browser, fhol_report, tmp_path):
    data, out = fhol_report
    page = _page(tmp_path, "fhol", out.html)
    # the first screen at 1,400 x 900: the health banner, the verdict, every success and guardrail
    # card, the mechanism check and the revision mark, without a horizontal scroll
    screen = first_screen(browser, page)
    assert_on_first_screen(screen, "health", "verdicts", "cards", "mechanism", "revision")
    declared = data.decision_tests[(data.decision_tests["as_of_date"] == DAY)
                                   & data.decision_tests["role"].isin(["success", "guardrail"])]  # fmt: skip
    assert len(screen["cards"]) == declared[["metric", "quantile_p"]].drop_duplicates().shape[0] == 3
    assert screen["verdicts"][0]["text"].startswith("Keep running")
    assert "Revised since published" in screen["revision"][0]["text"]
    # HoL-blocked time (control 0: no relative delta) is drawn, on the absolute scale
    assert any("HoL-blocked time per request" in p for p in screen["panels"]), screen["panels"]
    browser.save_screenshot(str(tmp_path / "fhol_first_screen.png"))
    shot = tmp_path / "fhol.png"
    facts = browser_facts(browser, page, screenshot=shot)
    assert_readable(facts)
    assert facts["title"] == "QUIC+FHOL vs QUIC — 2026-06-17" and facts["first"] == "header"
    ids = {t["id"] for t in facts["tables"]}
    assert {"arms", "scorecard", "percentile-table", "multipath-table", "power-table"} <= ids
    assert "p95 request latency" in facts["text"] and "every check passed" in facts["text"]
    with Image.open(shot) as im:  # the page is drawn: tall, and not a blank canvas
        assert im.size[1] > 3000
        assert len(im.convert("L").resize((64, 256)).getcolors(4096) or []) > 20


def test_three_arm_report_in_chromium(browser, three_arm_report, tmp_path):
    _, out = three_arm_report
    page = _page(tmp_path, "three_arm", out.html)
    screen = first_screen(browser, page)
    assert_on_first_screen(screen, "health", "verdicts", "cards")
    assert [v["id"] for v in screen["verdicts"]] == ["verdict-fhol", "verdict-fhol_x2"]
    assert [c["arms"] for c in screen["cards"]] == [2, 2, 2]  # both treatment arms on every card
    assert_readable(browser_facts(browser, page))


def test_srm_report_in_chromium_leads_with_the_warning(browser, srm_results, tmp_path):
    out = render(ReportData(experiment("srm_test"), DAY, srm_results))
    page = _page(tmp_path, "srm", out.html)
    facts = browser_facts(browser, page)
    assert_readable(facts)
    assert facts["first"] == "health" and facts["title"].startswith("⚠ SRM")
    assert facts["text"].lstrip().startswith("⚠ Sample ratio mismatch: do not trust this report")
