"""Fixtures of the report tests: real result frames (stats engine) and one headless Chromium."""

from __future__ import annotations

import shutil
import sys
from datetime import date, timedelta
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent))  # the helpers below, in any --import-mode

import _report_frames as _frames

from quicexp.registry import Arm, Experiment, MetricRoles

DAY = date(2026, 6, 17)


def experiment(
    exp_id: str, arms=("control", "fhol"), shares=(0.5, 0.5), title: str = "", declared: bool = False
) -> Experiment:
    """A registry entry; ``declared``: with the metrics of ``_frames.FHOL_ROLES`` (for the
    minimum effects the cards draw)."""
    metrics = None
    if declared:
        by_role = {"success": [], "guardrails": [], "mechanism": []}
        for r in _frames.FHOL_ROLES:
            entry = {"metric": r["metric"], "quantile": r.get("quantile")}
            if r["role"] == "success":
                by_role["success"].append({**entry, "minimum_effect": r["minimum_effect"]})
            elif r["role"] == "guardrail":
                by_role["guardrails"].append({**entry, "margin": r.get("margin")})
            else:
                by_role["mechanism"].append({**entry, "expect": r["better"]})
        metrics = MetricRoles(**by_role)
    return Experiment(
        id=exp_id,
        title=title or f"Test experiment {exp_id}",
        start_date=date(2026, 6, 15),
        arms=[
            Arm(name=a, share=s, is_control=i == 0)
            for i, (a, s) in enumerate(zip(arms, shares, strict=True))
        ],
        metrics=metrics,
        planned_days=14,
    )


@pytest.fixture(scope="session")
def fhol_results():
    """Three as-of dates of a FHOL-shaped experiment (tail effect) with multipath metrics and
    HoL-blocked time (0 in the control)."""
    table = _frames.sufficient_stats(
        "fhol_test", n_units=3000, tail_effect=0.08, multipath=True, seed=11, hol=True
    )
    return _frames.results(table, {"fhol_test": {"control": 0.5, "fhol": 0.5}})


@pytest.fixture(scope="session")
def fhol_decisions(fhol_results):
    """The real decision layer's verdicts and tests of the FHOL frames (FHOL's declaration)."""
    return _frames.decisions(fhol_results, "fhol_test")


@pytest.fixture(scope="session")
def fhol_published(fhol_results, fhol_decisions):
    """What a report of the FHOL frames published, as if DAY's report had been sent when only the
    data of the day before had arrived (the engine's own numbers for DAY - 1, dated DAY): the
    lake's current numbers for DAY differ from them, i.e. DAY is revised."""
    from reports.revision import publication

    before = DAY - timedelta(days=1)
    res = fhol_results[fhol_results["as_of_date"] == before].assign(as_of_date=DAY)
    ver = fhol_decisions.verdicts
    ver = ver[pd.to_datetime(ver["as_of_date"]) == pd.Timestamp(before)].assign(as_of_date=pd.Timestamp(DAY))
    assert len(res) and len(ver) == 1
    pub = publication(res, ver, {"request_latency": "success", "request_latency_p@p95": "guardrail"})
    return pub.assign(published_at=pd.Timestamp("2026-06-17 06:30"))


@pytest.fixture(scope="session")
def fhol_report(fhol_results, fhol_decisions, fhol_published):
    """The FHOL report with its decision, a revision of its own day, the audit and a missing mart,
    rendered once for the render and the browser tests."""
    from reports import IngestQuality, ReportData, render

    quality = IngestQuality(DAY.replace(day=15), DAY, 200_000, 210, 990, 1500)
    data = ReportData(experiment("fhol_test", title="QUIC+FHOL vs QUIC", declared=True), DAY, fhol_results,
                      quality=quality, missing={"metric_values_daily": "test: not built"},
                      decisions=fhol_decisions.verdicts, decision_tests=fhol_decisions.tests,
                      published=fhol_published)  # fmt: skip
    return data, render(data)


@pytest.fixture(scope="session")
def three_arm_report():
    """Two treatment arms against one control (the lab's own shape): small frames, two days."""
    from reports import ReportData, render

    arms, shares = ("control", "fhol", "fhol_x2"), (0.34, 0.33, 0.33)
    table = _frames.sufficient_stats("three_arm", arms=arms, shares=shares, n_units=1200, days=2,
                                     tail_effect=0.08, seed=14, hol=True)  # fmt: skip
    results = _frames.results(table, {"three_arm": dict(zip(arms, shares, strict=True))})
    decided = _frames.decisions(results, "three_arm")
    data = ReportData(experiment("three_arm", arms=arms, shares=shares, declared=True), DAY - timedelta(days=1),
                      results, decisions=decided.verdicts, decision_tests=decided.tests)  # fmt: skip
    return data, render(data)


@pytest.fixture(scope="session")
def aa_results():
    table = _frames.sufficient_stats(
        "aa_test", arms=("control", "same"), n_units=3000, tail_effect=0.0, seed=12
    )
    return _frames.results(table, {"aa_test": {"control": 0.5, "same": 0.5}})


@pytest.fixture(scope="session")
def srm_results():
    """Assignment 60/40 while the registry says 50/50: a sample ratio mismatch."""
    table = _frames.sufficient_stats("srm_test", shares=(0.6, 0.4), n_units=2000, seed=13)
    return _frames.results(table, {"srm_test": {"control": 0.5, "fhol": 0.5}})


@pytest.fixture(scope="session")
def browser():
    """One headless Debian Chromium for the whole run (scripts/test-deps.d/chromium.sh installs it)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    assert chromium and driver, (
        "chromium and chromium-driver are needed: run scripts/test-deps.d/chromium.sh"
    )
    options = Options()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1300,1800", "--allow-file-access-from-files"):  # fmt: skip
        options.add_argument(arg)
    options.binary_location = chromium
    session = webdriver.Chrome(service=Service(driver), options=options)
    yield session
    session.quit()
