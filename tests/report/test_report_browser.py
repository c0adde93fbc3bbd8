"""The report as a person sees it: rendered by headless Chromium, checked through the DOM."""

from __future__ import annotations

from _report_html import assert_readable, browser_facts
from conftest import DAY, experiment
from PIL import Image

from reports import ReportData, render


def test_fhol_report_in_chromium(browser, fhol_results, tmp_path):
    out = render(ReportData(experiment("fhol_test", title="QUIC+FHOL vs QUIC"), DAY, fhol_results))
    page = tmp_path / "fhol.html"
    page.write_text(out.html, encoding="utf-8")
    shot = tmp_path / "fhol.png"
    facts = browser_facts(browser, page, screenshot=shot)
    assert_readable(facts)
    assert facts["title"] == "QUIC+FHOL vs QUIC — 2026-06-17" and facts["first"] == "header"
    ids = {t["id"] for t in facts["tables"]}
    assert {"arms", "scorecard", "percentile-table", "multipath-table", "power-table"} <= ids
    assert "p95 request latency" in facts["text"] and "Sample ratio check passed" in facts["text"]
    with Image.open(shot) as im:  # the page is drawn: tall, and not a blank canvas
        assert im.size[1] > 3000
        assert len(im.convert("L").resize((64, 256)).getcolors(4096) or []) > 20


def test_srm_report_in_chromium_leads_with_the_warning(browser, srm_results, tmp_path):
    out = render(ReportData(experiment("srm_test"), DAY, srm_results))
    page = tmp_path / "srm.html"
    page.write_text(out.html, encoding="utf-8")
    facts = browser_facts(browser, page)
    assert_readable(facts)
    assert facts["first"] == "srm-warning" and facts["title"].startswith("⚠ SRM")
    assert facts["text"].lstrip().startswith("⚠ Sample ratio mismatch: do not trust this report")
