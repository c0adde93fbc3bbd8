"""Superset on the lake: the bundle, setup secrets, every chart's query through the API, login
security, and export → normalise giving back the committed bundle."""

from __future__ import annotations

import json
import stat

import pytest
import requests
import yaml
from bs4 import BeautifulSoup

from quicexp.app.superset import bundle, service
from quicexp.config import REPO_ROOT
from tests.pipeline_lake import FHOL as EXPERIMENT
from tests.serving.superset_api import SupersetApi, chart_query


def test_bundle_is_closed_by_uuid_and_free_of_instance_ids():
    files = bundle.load_bundle()
    assert not list(bundle.uuid_links(files))
    kinds = {rel.split("/", 1)[0] for rel in files}
    assert {"databases", "datasets", "charts", "dashboards"} <= kinds
    text = "\n".join(p.read_text() for p in bundle.BUNDLE_DIR.rglob("*.yaml"))
    for needle in ("slice_id", "datasource_id", "__table", "query_context", "password"):
        assert needle not in text, needle
    [database] = [d for rel, d in files.items() if rel.startswith("databases/")]
    assert (
        database["sqlalchemy_uri"] == bundle.CANONICAL_URI and "@" not in database["sqlalchemy_uri"]
    )
    assert database["allow_dml"] is False
    dashboards = [d for rel, d in files.items() if rel.startswith("dashboards/")]
    assert len(dashboards) == 4
    for dash in dashboards:
        names = {f["name"] for f in dash["metadata"]["native_filter_configuration"]}
        assert names == {"Experiment", "Platform", "Date"}, dash["dashboard_title"]
    for rel, doc in files.items():
        if rel.startswith("datasets/"):
            assert doc.get("metrics"), f"{rel}: metric definitions live on the dataset"


def test_render_then_normalise_is_identity(serving):
    files = bundle.load_bundle()
    rendered = bundle.render(files, serving.settings)
    [database] = [d for rel, d in rendered.items() if rel.startswith("databases/")]
    assert (
        database["sqlalchemy_uri"]
        == f"hive://127.0.0.1:{serving.settings.services.thrift_port}/default"
    )
    assert {d["schema"] for rel, d in rendered.items() if rel.startswith("datasets/")} == {
        serving.settings.gold_schema
    }
    assert bundle.normalise(bundle.read_zip(bundle.to_zip(rendered)), serving.settings) == files


def test_a_viewed_dashboard_normalises_to_the_committed_one(serving):
    """The first browser view writes the colour palette and the series labels back into the
    dashboard's metadata; that is UI state."""
    files = bundle.load_bundle()
    rendered = bundle.render(files, serving.settings)
    for rel, doc in rendered.items():
        if rel.startswith("dashboards/"):
            doc["metadata"]["color_scheme_domain"] = ["#1FA8C9", "#454E7C"]
            doc["metadata"]["shared_label_colors"] = ["control, Android", "treatment, Android"]
            doc["metadata"]["map_label_colors"] = {"control, Android": "#1FA8C9"}
    assert bundle.normalise(bundle.read_zip(bundle.to_zip(rendered)), serving.settings) == files


def test_secrets_are_generated_private_and_outside_the_repo(serving, superset):
    paths = service.SupersetPaths.of(serving.settings)
    for path in (paths.secret_key, paths.admin_password):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert REPO_ROOT not in path.resolve().parents
    assert superset.password != "admin" and len(superset.password) >= 20
    assert len(paths.secret_key.read_text().strip()) >= 40
    print(
        f"\n[serving] superset first setup (db upgrade + init + import): {superset.setup_seconds:.0f}s"
    )


def test_wrong_password_is_refused(superset):
    api = requests.post(
        f"{superset.url}/api/v1/security/login",
        json={"username": superset.user, "password": superset.password + "x", "provider": "db"},
        timeout=60,
    )
    assert api.status_code == 401
    for password, logged_in in (
        ("admin", False),
        (superset.password + "x", False),
        (superset.password, True),
    ):
        with requests.Session() as browser:
            page = browser.get(f"{superset.url}/login/", timeout=60)
            token = BeautifulSoup(page.text, "html.parser").find("input", {"name": "csrf_token"})[
                "value"
            ]
            form = browser.post(
                f"{superset.url}/login/",
                data={"username": superset.user, "password": password, "csrf_token": token},
                allow_redirects=False,
                timeout=60,
            )
            assert form.status_code in (302, 303)
            assert ("/login" in form.headers["Location"]) is not logged_in
            me = browser.get(f"{superset.url}/api/v1/me/", timeout=60)
            assert me.status_code == (
                200 if logged_in else 401
            )  # the right password is the control


def _params(chart: dict) -> dict:
    return json.loads(chart["params"]) if isinstance(chart["params"], str) else chart["params"]


@pytest.fixture(scope="module")
def api(superset) -> SupersetApi:
    return SupersetApi(superset.url, superset.user, superset.password)


def test_every_chart_query_returns_rows(serving, api):
    charts = api.charts()
    assert len(charts) == len(list(bundle.BUNDLE_DIR.glob("charts/*.yaml")))
    empty, failed = [], []
    for chart in charts:
        resp = api.chart_data(
            chart_query(chart, [{"col": "experiment_id", "op": "IN", "val": [EXPERIMENT]}])
        )
        if resp.status_code != 200:
            failed.append(f"{chart['slice_name']}: {resp.status_code} {resp.text[:300]}")
            continue
        [result] = resp.json()["result"]
        if result["rowcount"] == 0:
            empty.append(chart)
    assert not failed, failed
    assert not empty, f"charts without rows: {sorted(c['slice_name'] for c in empty)}"


def test_platform_filter_works_on_the_calculated_column(api):
    [chart] = [c for c in api.charts() if c["slice_name"] == "Scorecard: metric × platform"]
    resp = api.chart_data(chart_query(chart, [{"col": "platform", "op": "IN", "val": ["Windows"]}]))
    assert resp.status_code == 200, resp.text[:300]
    data = resp.json()["result"][0]["data"]
    assert data and {row["platform"] for row in data} == {"Windows"}


def test_the_lake_database_is_read_only_in_superset(api):
    [database] = api.get("/api/v1/database/", q="(page_size:10)")["result"]
    detail = api.get(f"/api/v1/database/{database['id']}")["result"]
    assert (
        detail["allow_dml"] is False
        and detail["allow_ctas"] is False
        and detail["allow_cvas"] is False
    )


def test_export_normalises_back_to_the_committed_bundle(serving, superset, tmp_path):
    written = service.export_bundle(serving.settings, tmp_path)
    exported = {p.relative_to(tmp_path).as_posix(): yaml.safe_load(p.read_text()) for p in written}
    committed = bundle.load_bundle()
    assert exported.keys() == committed.keys()
    for rel, doc in committed.items():
        assert exported[rel] == doc, rel


# --- issue 19, item 1: SQL Lab cannot reach a process or a JVM method either --------------------


def test_render_puts_the_thrift_login_beside_the_bundle_not_in_it(serving):
    rendered = bundle.render(bundle.load_bundle(), serving.settings, "quicexp")
    [database] = [d for rel, d in rendered.items() if rel.startswith("databases/")]
    port = serving.settings.services.thrift_port
    assert database["sqlalchemy_uri"] == f"hive://quicexp:XXXXXXXXXX@127.0.0.1:{port}/default?auth=CUSTOM"
    assert "password" not in database


def test_sql_lab_refuses_script_transforms_and_reflection(serving, api):
    from tests.serving.test_thrift import PAYLOADS

    [database] = api.get("/api/v1/database/", q="(page_size:10)")["result"]
    control = api.sqllab(database["id"], "SELECT 1 AS one", serving.settings.gold_schema)
    assert control.status_code == 200, control.text[:500]  # logged in to Thrift with the credentials
    assert control.json()["data"] == [{"one": 1}]
    for sql, named in PAYLOADS[:5]:
        resp = api.sqllab(database["id"], sql, serving.settings.gold_schema)
        assert resp.status_code != 200, f"{sql}: {resp.text[:300]}"
        assert "quicexp SQL guard: refused" in resp.text and named in resp.text, f"{sql}: {resp.text[:500]}"
        assert "uid=" not in resp.text
