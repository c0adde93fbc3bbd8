"""Fixtures of the report tests: real result frames (stats engine) and one headless Chromium."""

from __future__ import annotations

import shutil
import sys
from datetime import date
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # the helpers below, in any --import-mode

import _report_frames as _frames

from quicexp.registry import Arm, Experiment

DAY = date(2026, 6, 17)


def experiment(
    exp_id: str, arms=("control", "fhol"), shares=(0.5, 0.5), title: str = ""
) -> Experiment:
    return Experiment(
        id=exp_id,
        title=title or f"Test experiment {exp_id}",
        start_date=date(2026, 6, 15),
        arms=[
            Arm(name=a, share=s, is_control=i == 0)
            for i, (a, s) in enumerate(zip(arms, shares, strict=True))
        ],
    )


@pytest.fixture(scope="session")
def fhol_results():
    """Three as-of dates of a FHOL-shaped experiment (tail effect) with multipath metrics."""
    table = _frames.sufficient_stats(
        "fhol_test", n_units=3000, tail_effect=0.08, multipath=True, seed=11
    )
    return _frames.results(table, {"fhol_test": {"control": 0.5, "fhol": 0.5}})


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
