"""Superset on the lake: the bundle (a pinned as-of date on every dashboard, registry labels and
units, direction colours, intervals as lines, buckets in order), setup secrets, every chart's
query through the API under the dashboards' default filters, the scorecard's verdict and assigned
units against the lake, login security, and export → normalise giving back the committed bundle."""

from __future__ import annotations

import json
import re
import stat

import pytest
import requests
import yaml
from bs4 import BeautifulSoup

from quicexp.app.superset import bundle, service
from quicexp.config import REPO_ROOT
from reports.decision import VERDICT_TEXT, reason_text
from reports.metrics import current, display
from tests.pipeline_lake import FHOL as EXPERIMENT
from tests.serving.superset_api import SupersetApi, chart_query

FILTERS = ["Experiment", "As-of date", "Treatment arm", "Platform"]
#: FHOL's treatment arm (registry/experiments.yml)
ARM = "fhol"
#: the estimate and its 95% CI's ends, three lines (Superset's forecast band, metrics named
#: ``__yhat_lower/upper``, loses stretches of wide intervals and stacks a numeric x axis)
INTERVAL = ["delta_pct", "ci95_low", "ci95_high"]


def _by_uuid(files: dict, kind: str) -> dict:
    return {doc["uuid"]: doc for rel, doc in files.items() if rel.startswith(f"{kind}/")}


def _dashboard_charts(files: dict, dash: dict) -> list[dict]:
    charts = _by_uuid(files, "charts")
    return [
        charts[node["meta"]["uuid"]]
        for node in dash["position"].values()
        if isinstance(node, dict) and node.get("type") == "CHART"
    ]


def test_every_dashboard_pins_one_as_of_date_and_shows_it_first():
    """One experiment, one as-of date (its latest unless another is picked), one treatment arm
    and 'All platforms' by default; every chart reads only that date's rows (no max_by over a
    range of days); the first row says which date it is."""
    files = bundle.load_bundle()
    datasets = _by_uuid(files, "datasets")
    for rel, dash in files.items():
        if not rel.startswith("dashboards/"):
            continue
        filters = {f["name"]: f for f in dash["metadata"]["native_filter_configuration"]}
        experiment, as_of = filters["Experiment"], filters["As-of date"]
        assert as_of["targets"][0]["column"]["name"] == "as_of"
        assert as_of["cascadeParentIds"] == [experiment["id"]]
        for name, descending in (("Experiment", False), ("As-of date", True), ("Treatment arm", False)):
            values = filters[name]["controlValues"]
            assert values["defaultToFirstItem"] and values["enableEmptyFilter"], (rel, name)
            # without requiredFirst the first item is only a pending selection: charts load unfiltered
            assert filters[name]["requiredFirst"] is True, (rel, name)
            assert not values["multiSelect"] and values["sortAscending"] is not descending, (rel, name)
        assert filters["Platform"]["defaultDataMask"]["filterState"]["value"] == ["All platforms"]
        grid = dash["position"]["GRID_ID"]["children"]
        first_row = [dash["position"][c]["meta"]["uuid"] for c in dash["position"][grid[0]]["children"]]
        headers = [c for c in _dashboard_charts(files, dash) if c["uuid"] in first_row
                   and "as of {{as_of}}" in c["params"].get("handlebarsTemplate", "")]  # fmt: skip
        assert len(headers) == 1, rel
        params = headers[0]["params"]
        assert "as_of" in (params.get("groupby") or []) + (params.get("all_columns") or [])
        if rel == "dashboards/experiment_scorecard.yaml":  # the verdict and health lead
            assert headers[0]["slice_name"] == "Verdict and health"
        for chart in _dashboard_charts(files, dash):
            columns = {c["column_name"] for c in datasets[chart["dataset_uuid"]]["columns"]}
            assert {"experiment_id", "as_of"} <= columns, (rel, chart["slice_name"])
    for dataset in datasets.values():
        assert all("max_by" not in m["expression"] for m in dataset["metrics"]), dataset["table_name"]


def _referenced_columns(params: dict) -> set[str]:
    cols = set(params.get("all_columns") or []) | set(params.get("groupby") or [])
    cols |= {params["x_axis"]} if params.get("x_axis") else set()
    cols |= {json.loads(o)[0] for o in params.get("order_by_cols") or []}
    cols |= {f["subject"] for f in params.get("adhoc_filters") or [] if f["expressionType"] == "SIMPLE"}
    cols |= set(params.get("column_config") or {})
    for rule in params.get("conditional_formatting") or []:
        cols |= {rule["column"], rule.get("columnFormatting", rule["column"])}
    return cols


def test_charts_name_only_columns_and_metrics_of_their_dataset():
    files = bundle.load_bundle()
    datasets = _by_uuid(files, "datasets")
    for chart in _by_uuid(files, "charts").values():
        dataset, params = datasets[chart["dataset_uuid"]], chart["params"]
        columns = {c["column_name"] for c in dataset["columns"]}
        metrics = {m["metric_name"] for m in dataset["metrics"]}
        assert _referenced_columns(params) <= columns, (chart["slice_name"], _referenced_columns(params) - columns)
        assert set(params.get("metrics") or []) <= metrics, chart["slice_name"]
        for rule in params.get("conditional_formatting") or []:  # coloured cells are shown
            assert rule.get("columnFormatting", rule["column"]) in params["all_columns"]


def test_effects_are_coloured_by_direction_and_intervals_drawn_as_lines():
    """No box plot (its 'outlier' legend), no cell bar coloured by sign: table cells are
    coloured by the outcome (better green, worse red, from the metric's direction); CI charts
    draw the estimate between its 95% CI's ends (one treatment arm: no groups), in grey, on a
    categorical axis sorted by its own values, not clipped (a clipped axis hides the interval)."""
    files = bundle.load_bundle()
    comparisons = {d["uuid"] for d in _by_uuid(files, "datasets").values() if d["table_name"] == "experiment_comparisons"}
    dashboards = [d for rel, d in files.items() if rel.startswith("dashboards/")]
    intervals = 0
    for chart in _by_uuid(files, "charts").values():
        params = chart["params"]
        assert chart["viz_type"] != "box_plot", chart["slice_name"]
        assert not any(m.endswith(("__yhat_lower", "__yhat_upper")) for m in params.get("metrics") or [])
        if chart["viz_type"] == "table":
            assert params["show_cell_bars"] is False and params["color_pn"] is False
            if "outcome" in params["all_columns"]:
                rules = {(r["targetValue"], r.get("columnFormatting", "outcome")) for r in params["conditional_formatting"]}
                assert {("better", "outcome"), ("worse", "outcome"), ("better", "delta_pct")} <= rules
        if "ci95_low" in (params.get("metrics") or []):
            assert chart["dataset_uuid"] in comparisons
            assert params["metrics"] == INTERVAL and params["groupby"] == [], chart["slice_name"]
            assert params["xAxisForceCategorical"] and params["x_axis_sort"] == params["x_axis"]
            assert "y_axis_bounds" not in params and params["truncateYAxis"] is False
            for dash in dashboards:
                if any(c["uuid"] == chart["uuid"] for c in _dashboard_charts(files, dash)):
                    colours = dash["metadata"]["label_colors"]
                    assert colours["95% CI low"] == colours["95% CI high"] != colours["Δ %"], dash["dashboard_title"]
            intervals += 1
    assert intervals == 4  # the percentile-delta curve and the three bucket charts


def test_bucket_labels_sort_in_their_natural_order():
    """Charts sort the x axis alphabetically: the bucket label with its position in front
    (models/marts/superset_segment_order.sql, experiment_comparisons.condition_label) sorts like
    the buckets of dbt_project.yml."""
    buckets = yaml.safe_load((REPO_ROOT / "dbt_project.yml").read_text())["vars"]["segment_buckets"]
    for spec in buckets.values():
        labels = [f"{i} · {label}" for i, label in enumerate(spec["labels"], 1)]
        assert len(labels) < 10 and sorted(labels) == labels
    files = bundle.load_bundle()
    [comparisons] = [d for d in _by_uuid(files, "datasets").values() if d["table_name"] == "experiment_comparisons"]
    assert "concat(coalesce(CAST(o.position AS STRING), '9'), ' · ', r.condition_value)" in comparisons["sql"]
    for chart in _by_uuid(files, "charts").values():
        if "bucket" in chart["slice_name"]:
            assert chart["params"]["x_axis"] == "condition_label", chart["slice_name"]


def _segment_columns() -> list[str]:
    """The segment types of macros/segments.sql segment_columns(), in its order."""
    text = (REPO_ROOT / "macros" / "segments.sql").read_text()
    body = re.search(r"macro segment_columns\(\) %\}\s*\{\{ return\((\[.*?\])\) \}\}", text, re.S)
    return yaml.safe_load(body.group(1))


def test_condition_tables_show_every_network_condition_segment():
    """The qlog chart and the effects table name every network-condition segment type, the
    lab's condition and its grid values included, and sort them by type, then value."""
    conditions = [c for c in _segment_columns() if c not in ("platform", "network_type")]
    assert {"rtt_bucket", "network_condition", "condition_bandwidth"} <= set(conditions)
    charts = {c["slice_name"]: c["params"] for c in _by_uuid(bundle.load_bundle(), "charts").values()}
    for name in ("Transport per arm and network condition: qlog and telemetry", "Effects by network condition"):
        params = charts[name]
        [types] = [f["comparator"] for f in params["adhoc_filters"] if f.get("subject") == "condition_type"]
        assert set(conditions) <= set(types), (name, set(conditions) - set(types))
        order = [json.loads(o)[0] for o in params["order_by_cols"]]
        assert order.index("condition_type_position") < order.index("condition_position") < order.index("condition_value")


def test_handlebars_charts_are_styled_by_their_dashboard():
    """Superset's HTML sanitizer prints a Handlebars chart's own <style> as text: the qx-* styles
    are the dashboards' CSS, on the sanitizer's user-content- ids (suffix selectors)."""
    files = bundle.load_bundle()
    for chart in _by_uuid(files, "charts").values():
        assert "styleTemplate" not in chart["params"], chart["slice_name"]
    for rel, dash in files.items():
        if rel.startswith("dashboards/"):
            templates = " ".join(c["params"].get("handlebarsTemplate", "") for c in _dashboard_charts(files, dash))
            styled = set(re.findall(r'\[id[$*]="(qx-[a-z_-]+?)(?:ship|keep_running|rollback|no_ship|invalid|pass|fail)?"\]', dash["css"]))
            assert "qx-asof" in styled and all(f'id="{i}' in templates for i in styled), (rel, styled)


def test_trend_charts_draw_one_line_per_arm_in_the_registry_unit():
    files = bundle.load_bundle()
    datasets = _by_uuid(files, "datasets")
    trends = [c for c in _by_uuid(files, "charts").values()
              if datasets[c["dataset_uuid"]]["table_name"] == "metric_values_daily_as_of"]  # fmt: skip
    assert len(trends) == 4
    for chart in trends:
        params = chart["params"]
        [metric] = [f["comparator"] for f in params["adhoc_filters"] if f["subject"] == "metric"]
        unit = display(metric).unit
        assert params["groupby"] == ["arm"], chart["slice_name"]
        assert params["y_axis_title"] == unit and chart["slice_name"].endswith(f"({unit})")


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
        names = [f["name"] for f in dash["metadata"]["native_filter_configuration"]]
        assert names == FILTERS, dash["dashboard_title"]
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


@pytest.fixture(scope="module")
def look(pipeline_lake) -> dict:
    """What the dashboards show by default: FHOL (the first experiment), its latest as-of date,
    its one treatment arm, all platforms."""
    return {"experiment_id": EXPERIMENT, "as_of": max(pipeline_lake.days).isoformat(),
            "treatment_arm": ARM, "platform": "All platforms"}  # fmt: skip


def _look_filters(api, chart: dict, look: dict) -> list[dict]:
    """The native filters' defaults on the columns the chart's dataset has (Superset leaves the
    others out of a chart's query, as the dashboard does)."""
    columns = {c["column_name"] for c in api.get(f"/api/v1/dataset/{chart['datasource_id']}")["result"]["columns"]}
    return [{"col": c, "op": "IN", "val": [v]} for c, v in look.items() if c in columns]


def _rows(api, chart: dict, look: dict, columns: list[str] | None = None) -> list[dict]:
    query = chart_query(chart, _look_filters(api, chart, look))
    if columns is not None:
        query["queries"][0]["columns"] = columns
    resp = api.chart_data(query)
    assert resp.status_code == 200, f"{chart['slice_name']}: {resp.status_code} {resp.text[:300]}"
    return resp.json()["result"][0]["data"]


def test_every_chart_query_returns_rows_of_the_pinned_look(api, look):
    charts = api.charts()
    assert len(charts) == len(list(bundle.BUNDLE_DIR.glob("charts/*.yaml")))
    empty = []
    for chart in charts:
        rows = _rows(api, chart, look)
        if not rows:
            empty.append(chart["slice_name"])
        assert {r["as_of"] for r in rows if "as_of" in r} <= {look["as_of"]}, chart["slice_name"]
    assert not empty, f"charts without rows: {sorted(empty)}"


def _chart(api, name: str) -> dict:
    [chart] = [c for c in api.charts() if c["slice_name"] == name]
    return chart


def test_the_scorecard_shows_the_lakes_verdict_and_the_assigned_units(serving, api, look, thrift_cursor):
    [row] = _rows(api, _chart(api, "Verdict and health"), look)
    cur = thrift_cursor()
    gold, silver = serving.settings.gold_schema, serving.settings.silver_schema
    cur.execute(
        f"SELECT verdict, reasons FROM {gold}.experiment_decisions WHERE experiment_id = '{EXPERIMENT}' "
        f"AND as_of_date = DATE'{look['as_of']}' AND treatment_arm = '{ARM}'"
    )
    [(verdict, reasons)] = cur.fetchall()
    reasons = json.loads(reasons) if isinstance(reasons, str) else list(reasons)
    assert row["verdict"] == verdict and row["verdict_text"] == VERDICT_TEXT[verdict][0]
    assert reasons and row["reasons_text"] == "; ".join(reason_text(r) for r in reasons)  # the report's words
    raw_ids = [m.name for m in current().metrics if "_" in m.name and m.name in row["reasons_text"]]
    assert not raw_ids, row["reasons_text"]  # metrics named by their registry labels
    assert row["health"] in ("pass", "fail") and "sample" in row["health_text"]
    cur.execute(
        f"SELECT arm, count(DISTINCT client_id) FROM {silver}.int_experiment_units_segmented_to_dates "
        f"WHERE experiment_id = '{EXPERIMENT}' AND as_of_date = DATE'{look['as_of']}' GROUP BY arm"
    )
    assigned = dict(cur.fetchall())
    shown = {row["control_arm"]: row["units_control"], ARM: row["units_treatment"]}
    assert {arm: int(text.replace(",", "")) for arm, text in shown.items()} == assigned
    arms = {r["arm"]: r["n_units"] for r in _rows(api, _chart(api, "Units assigned and sample ratio"), look)}
    assert arms == assigned


def test_scorecard_rows_have_registry_labels_units_and_outcomes_by_direction(api, look):
    chart = _chart(api, "Scorecard: every metric, selected platform")
    rows = _rows(api, chart, look, ["metric", "quantile_p", "metric_label", "unit", "outcome", "delta_abs",
                                    "is_significant", "platform"])  # fmt: skip
    assert rows and {r["platform"] for r in rows} == {"All platforms"}
    for r in rows:
        shown = display(r["metric"])
        assert shown.label in r["metric_label"] and ("_" not in r["metric"] or r["metric"] not in r["metric_label"]), r
        assert r["unit"] == shown.unit and (not shown.unit or r["metric_label"].endswith(f"({shown.unit})"))
        expected = "inconclusive"
        if r["is_significant"] and r["delta_abs"]:
            expected = "better" if (r["delta_abs"] > 0) == shown.higher_is_better else "worse"
        assert r["outcome"] == expected, r
    windows = _rows(api, chart, {**look, "platform": "Windows"}, ["metric_label", "platform"])
    assert windows and {r["platform"] for r in windows} == {"Windows"}


def test_bucket_charts_show_each_bucket_of_the_look_once_in_natural_order(api, look):
    buckets = yaml.safe_load((REPO_ROOT / "dbt_project.yml").read_text())["vars"]["segment_buckets"]
    chart = _chart(api, "Request latency Δ % by RTT bucket")
    labels = [r["condition_label"] for r in _rows(api, chart, look)]
    assert labels and len(labels) == len(set(labels))  # one as-of date: no day-1 bucket beside day 2's
    ordered = [f"{i} · {label}" for i, label in enumerate(buckets["rtt_bucket"]["labels"], 1)]
    assert [lab for lab in sorted(labels) if lab in ordered] == [lab for lab in ordered if lab in labels]
    assert all(lab.startswith("9 · ") for lab in set(labels) - set(ordered))  # unknown: last


def test_lab_condition_values_and_buckets_sort_in_their_natural_order(serving, thrift_cursor, look):
    """The dataset's own SQL over the look's overall request-latency row relabelled as the lab's
    condition segments (values as lab/config.py writes them) and as RTT buckets: types in
    segment_columns() order, the lab's values by their number (unlimited bandwidth last), the
    buckets in the var's order with unknown last."""
    from lab.config import Condition

    grid = [Condition(rtt_ms=r, loss=p, bandwidth_mbps=b) for r, p, b in ((80, 0.02, 20), (20, 0.005, None), (200, 0, 5))]
    by_number = {"rtt": lambda c: c.rtt_ms, "loss": lambda c: c.loss, "bandwidth": lambda c: c.bandwidth_mbps or float("inf")}
    expected = [(f"condition_{k}", c.labels()[k]) for k in ("rtt", "loss", "bandwidth") for c in sorted(grid, key=by_number[k])]
    buckets = yaml.safe_load((REPO_ROOT / "dbt_project.yml").read_text())["vars"]["segment_buckets"]["rtt_bucket"]["labels"]
    expected = [("rtt_bucket", b) for b in [*buckets, "unknown"]] + expected
    gold = serving.settings.gold_schema
    [sql] = [d["sql"] for rel, d in bundle.render(bundle.load_bundle(), serving.settings).items()
             if rel.startswith("datasets/") and d["table_name"] == "experiment_comparisons"]  # fmt: skip
    cur = thrift_cursor()
    cur.execute(f"SELECT * FROM {gold}.experiment_results LIMIT 0")
    relabelled = {"segment_type": "v.t AS segment_type", "segment_value": "v.v AS segment_value"}
    columns = ", ".join(relabelled.get(d[0].split(".")[-1], f"e.{d[0].split('.')[-1]}") for d in cur.description)
    values = ", ".join(f"('{t}', '{v}')" for t, v in reversed(expected))
    source = (f"(SELECT {columns} FROM {gold}.experiment_results AS e CROSS JOIN VALUES {values} AS v(t, v) "
              f"WHERE e.experiment_id = '{EXPERIMENT}' AND e.as_of_date = DATE'{look['as_of']}' "
              f"AND e.treatment_arm = '{ARM}' AND e.segment_type = 'overall' AND e.metric = 'request_latency')")  # fmt: skip
    assert f"FROM {gold}.experiment_results AS r" in sql
    cur.execute(f"SELECT condition_type, condition_value FROM ({sql.replace(f'FROM {gold}.experiment_results AS r', f'FROM {source} AS r')}) "
                "ORDER BY condition_type_position, condition_position, condition_value")  # fmt: skip
    assert [tuple(row) for row in cur.fetchall()] == expected


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
