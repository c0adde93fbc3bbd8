"""Each dashboard in Debian's headless Chromium, logged in through the form: every chart renders
data (checked in the DOM: a drawn chart, no error/alert panel, no "No results"), and a
screenshot per dashboard is saved under the test's tmp dir."""

from __future__ import annotations

import shutil
import time

import pytest

from quicexp.app.superset import bundle

ERROR_TEXTS = (
    "No results",
    "Unexpected error",
    "Error:",
    "Data error",
    "Missing dataset",
    "not found",
)
# A drawn chart body: ECharts draws a canvas in its instance div; tables draw rows.
RENDERED = "[_echarts_instance_] canvas, [_echarts_instance_] svg, table tbody tr"

DASHBOARDS = sorted(
    (
        doc["slug"],
        doc["dashboard_title"],
        sum(
            1
            for node in doc["position"].values()
            if isinstance(node, dict) and node.get("type") == "CHART"
        ),
    )
    for rel, doc in bundle.load_bundle().items()
    if rel.startswith("dashboards/")
)


@pytest.fixture(scope="module")
def browser(tmp_path_factory, superset):
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and driver):
        pytest.fail(
            "chromium and chromium-driver are required (scripts/test-deps.d/chromium.sh installs them)"
        )
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in (
        "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-dev-shm-usage", "--window-size=1600,1400",
        f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}",
    ):  # fmt: skip
        options.add_argument(flag)
    drv = webdriver.Chrome(service=Service(driver), options=options)
    drv.set_page_load_timeout(300)
    yield drv
    drv.quit()


@pytest.fixture(scope="module")
def logged_in(browser, superset):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(f"{superset.url}/login/")
    wait = WebDriverWait(browser, 300)
    user = wait.until(
        ec.presence_of_element_located((By.CSS_SELECTOR, "input[name='username'], #username"))
    )
    user.send_keys(superset.user)
    password = browser.find_element(By.CSS_SELECTOR, "input[name='password'], #password")
    password.send_keys(superset.password + Keys.ENTER)
    wait.until(lambda d: "/login" not in d.current_url)
    return browser


def _chart_states(driver) -> list[dict]:
    """Per chart holder on the page: its name, whether a body is drawn, any error text."""
    return driver.execute_script(
        """
        const holders = [...document.querySelectorAll('[data-test="chart-grid-component"]')];
        return holders.map(h => {
          const body = h.querySelector('.dashboard-chart') || h;
          const alert = body.querySelector('[role="alert"], .ant-alert-error, .ant-alert-warning');
          const loading = body.querySelector('.loading, [aria-label="Loading"], [data-test="loading-indicator"]');
          return {
            title: h.getAttribute('data-test-chart-name') || '',
            viz: h.getAttribute('data-test-viz-type') || '',
            drawn: !!body.querySelector(arguments[0]),
            loading: !!loading,
            alert: alert ? (alert.innerText || 'alert').trim() : '',
            text: body.innerText.slice(0, 400),
          };
        });
        """,
        RENDERED,
    )


@pytest.mark.parametrize(("slug", "title", "n_charts"), DASHBOARDS, ids=[d[0] for d in DASHBOARDS])
def test_dashboard_renders_every_chart_with_data(
    logged_in, serving, superset, tmp_path, slug, title, n_charts
):
    driver = logged_in
    driver.get(f"{superset.url}/superset/dashboard/{slug}/?standalone=0")
    deadline = time.monotonic() + 600
    states: list[dict] = []
    while time.monotonic() < deadline:
        states = _chart_states(driver)
        settled = len(states) == n_charts and all(
            (s["drawn"] or s["alert"]) and not s["loading"] for s in states
        )
        if settled:
            break
        time.sleep(2)
    time.sleep(2)  # let animations finish before the screenshot
    shot = tmp_path / f"{slug}.png"
    driver.save_screenshot(str(shot))
    print(f"\n[serving] screenshot of {title}: {shot}")
    assert title in driver.title or title in driver.page_source
    filter_bar = driver.execute_script(
        "const bar = document.querySelector('[data-test=\"filter-bar\"]'); return bar ? bar.innerText : null;"
    )
    assert filter_bar is not None and "Experiment" in filter_bar and "Platform" in filter_bar
    assert "error" not in filter_bar.lower(), f"native filter bar shows an error: {filter_bar!r}"
    assert len(states) == n_charts, f"{len(states)} chart holders on the page, expected {n_charts}"
    problems = [
        s for s in states
        if not s["drawn"] or s["alert"] or s["loading"] or any(t in s["text"] for t in ERROR_TEXTS)
    ]  # fmt: skip
    assert shot.stat().st_size > 20_000
    assert not problems, problems
