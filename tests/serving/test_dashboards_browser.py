"""Each dashboard in Debian's headless Chromium, logged in through the form: every chart renders
data (checked in the DOM: a drawn chart, no error/alert panel, no "No results"), the pinned as-of
date (the lake's latest) is shown, the scorecard leads with the verdict and health, and a
screenshot per dashboard is saved under the test's tmp dir.

Settle time: from the page request to every chart drawn with no loading indicator, polled every
0.1 s, for the first (cold: Superset's and the Thrift server's caches empty for its queries) and the
second (warm) load of each dashboard. Reported, not asserted: on a shared 2-core machine the figure
says more about the load than about the dashboard (docs/serving.md has the measured values)."""

from __future__ import annotations

import shutil
import time

import pytest

from quicexp.app.superset import bundle
from reports.decision import VERDICT_TEXT

ERROR_TEXTS = (
    "No results",
    "Unexpected error",
    "Error:",
    "Data error",
    "Missing dataset",
    "not found",
)
# A drawn chart body: ECharts draws a canvas in its instance div; tables draw rows.
# Handlebars charts: Superset's sanitizer keeps ids (with the prefix "user-content-"), not classes.
RENDERED = (
    "[_echarts_instance_] canvas, [_echarts_instance_] svg, table tbody tr, "
    '[id*="qx-header"], [id*="qx-verdict-"]'
)
#: warm settle time per dashboard slug (seconds), printed at the end of the module
SETTLE: dict[str, tuple[float, float]] = {}

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
def logged_in(browser, superset, tmp_path_factory):
    """Logged in through the login form. The form is typed into once its inputs hold what was
    typed (a re-render of the page can drop keys typed too early) and submitted up to three
    times; a form still shown after that fails with the page's text and a screenshot."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    shot = None
    for attempt in range(3):
        browser.get(f"{superset.url}/login/")
        user = WebDriverWait(browser, 300).until(
            ec.element_to_be_clickable((By.CSS_SELECTOR, "input[name='username'], #username"))
        )
        password = browser.find_element(By.CSS_SELECTOR, "input[name='password'], #password")
        for field, text in ((user, superset.user), (password, superset.password)):
            field.clear()
            field.send_keys(text)
        if user.get_attribute("value") != superset.user or password.get_attribute("value") != superset.password:
            continue  # the form re-rendered under the keys: type again
        password.send_keys(Keys.ENTER)
        try:
            WebDriverWait(browser, 60).until(lambda d: "/login" not in d.current_url)
            return browser
        except TimeoutException:
            shot = tmp_path_factory.mktemp("login") / f"attempt{attempt}.png"
            browser.save_screenshot(str(shot))
    page = browser.find_element(By.TAG_NAME, "body").text[:500]
    pytest.fail(f"the login form is still shown after 3 attempts ({shot}): {page!r}")


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


def _settle(driver, url: str, n_charts: int, timeout_s: float = 600) -> tuple[float, list[dict]]:
    """Load ``url``; seconds until every chart holder shows a drawn body (or an alert) and no
    loading indicator, and the charts' states then."""
    started = time.monotonic()
    driver.get(url)
    states: list[dict] = []
    while time.monotonic() - started < timeout_s:
        states = _chart_states(driver)
        if len(states) == n_charts and all(
            (s["drawn"] or s["alert"]) and not s["loading"] for s in states
        ):
            break
        time.sleep(0.1)
    return time.monotonic() - started, states


@pytest.fixture(scope="module", autouse=True)
def settle_report():
    """Print every dashboard's settle times once the module's tests are done."""
    yield
    for slug, (cold, warm) in sorted(SETTLE.items()):
        print(f"\n[serving] settle {slug}: cold {cold:.1f}s, warm {warm:.1f}s")


@pytest.fixture(scope="module")
def latest_as_of(pipeline_lake) -> str:
    return max(pipeline_lake.days).isoformat()


@pytest.mark.parametrize(("slug", "title", "n_charts"), DASHBOARDS, ids=[d[0] for d in DASHBOARDS])
def test_dashboard_renders_every_chart_with_data(
    logged_in, serving, superset, latest_as_of, tmp_path, slug, title, n_charts
):
    driver = logged_in
    url = f"{superset.url}/superset/dashboard/{slug}/?standalone=0"
    cold, states = _settle(driver, url, n_charts)
    warm, states = _settle(driver, url, n_charts)
    SETTLE[slug] = (cold, warm)
    print(f"\n[serving] dashboard {slug}: settled in {cold:.1f}s cold, {warm:.1f}s warm (second load)")
    time.sleep(2)  # let animations finish before the screenshot
    shot = tmp_path / f"{slug}.png"
    driver.save_screenshot(str(shot))
    print(f"[serving] screenshot of {title}: {shot}")
    assert title in driver.title or title in driver.page_source
    filter_bar = driver.execute_script(
        "const bar = document.querySelector('[data-test=\"filter-bar\"]'); return bar ? bar.innerText : null;"
    )
    assert filter_bar is not None and "Experiment" in filter_bar and "As-of date" in filter_bar
    assert "error" not in filter_bar.lower(), f"native filter bar shows an error: {filter_bar!r}"
    assert latest_as_of in filter_bar, f"the As-of date filter does not show {latest_as_of}: {filter_bar!r}"
    applied = driver.execute_script(
        "const b = document.querySelector('[data-test=\"filter-bar__apply-button\"]'); return b ? b.disabled : null;"
    )
    assert applied is True, "the filters' first items are pending, not applied (native filters need requiredFirst)"
    assert len(states) == n_charts, f"{len(states)} chart holders on the page, expected {n_charts}"
    problems = [
        s for s in states
        if not s["drawn"] or s["alert"] or s["loading"] or any(t in s["text"] for t in ERROR_TEXTS)
        or '[id' in s["text"]  # a style printed as text (the sanitizer unwraps a chart's <style>)
    ]  # fmt: skip
    assert shot.stat().st_size > 20_000
    assert not problems, problems
    headers = driver.execute_script(
        "return [...document.querySelectorAll('[id*=\"qx-asof\"]')].map(e => e.innerText.trim());"
    )
    assert headers and set(headers) == {f"as of {latest_as_of}"}, headers  # pinned and shown
    if slug == "experiment-scorecard":
        verdicts = driver.execute_script(
            "return [...document.querySelectorAll('[id*=\"qx-verdict-\"]')].map(e => ({id: e.id, "
            "text: e.innerText, top: e.getBoundingClientRect().top, "
            "border: getComputedStyle(e).borderLeftWidth}));"
        )
        assert len(verdicts) == 1, verdicts  # FHOL: one treatment arm
        [verdict] = verdicts
        assert "Health:" in verdict["text"] and "Units assigned:" in verdict["text"]
        assert verdict["top"] < 700, "the verdict is not in the scorecard's first screen"
        assert verdict["border"] == "8px", verdict  # the dashboard's CSS reaches the chart
        assert any(words in verdict["text"] for words, _ in VERDICT_TEXT.values())
