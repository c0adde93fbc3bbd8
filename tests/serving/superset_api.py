"""A small client of Superset's REST API for the serving tests (login, charts, chart data).

``chart_query`` turns a chart's saved form data into the query context the frontend would post
(columns, saved metrics, filters), so every chart's SQL runs on the server exactly as stored.
"""

from __future__ import annotations

import json
from typing import Any

import requests


class SupersetApi:
    def __init__(self, url: str, user: str, password: str) -> None:
        self.url = url
        self.session = requests.Session()
        resp = self.session.post(
            f"{url}/api/v1/security/login",
            json={"username": user, "password": password, "provider": "db", "refresh": False},
            timeout=60,
        )
        resp.raise_for_status()
        self.session.headers["Authorization"] = f"Bearer {resp.json()['access_token']}"

    def get(self, path: str, **params: Any) -> Any:
        resp = self.session.get(f"{self.url}{path}", params=params, timeout=120)
        resp.raise_for_status()
        return resp.json()

    def sqllab(self, database_id: int, sql: str, schema: str | None = None) -> requests.Response:
        """Run ``sql`` through SQL Lab's API (synchronously), as the SQL Lab page does."""
        token = self.get("/api/v1/security/csrf_token/")["result"]
        return self.session.post(
            f"{self.url}/api/v1/sqllab/execute/",
            json={"database_id": database_id, "sql": sql, "schema": schema, "runAsync": False,
                  "client_id": f"t{abs(hash(sql)) % 10**9}", "queryLimit": 100},
            headers={"X-CSRFToken": token, "Referer": self.url},
            timeout=600,
        )  # fmt: skip

    def charts(self) -> list[dict[str, Any]]:
        """Every chart with its id, uuid, viz type, dataset id and saved params."""
        return self.get("/api/v1/chart/", q="(page_size:100)")["result"]

    def chart_data(self, query_context: dict[str, Any]) -> requests.Response:
        return self.session.post(f"{self.url}/api/v1/chart/data", json=query_context, timeout=600)


def _filters(adhoc: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    filters, where = [], []
    for item in adhoc:
        if item.get("expressionType") == "SQL":
            where.append(f"({item['sqlExpression']})")
        else:
            filters.append(
                {"col": item["subject"], "op": item["operator"], "val": item.get("comparator")}
            )
    return filters, " AND ".join(where)


def chart_query(
    chart: dict[str, Any], extra_filters: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The query context of a chart as stored (``chart`` is an item of GET /api/v1/chart/): in
    raw mode its columns and ordering, else its x axis, groups and saved metrics."""
    params = json.loads(chart["params"]) if isinstance(chart["params"], str) else chart["params"]
    orderby: list[list[Any]] = []
    metrics: list[Any] | None
    if params.get("query_mode") == "raw":
        columns = list(params.get("all_columns") or [])
        metrics = None  # as the frontend sends a raw query: no metrics at all (an empty list groups)
        orderby = [json.loads(o) for o in params.get("order_by_cols") or []]
    else:
        columns = [params["x_axis"]] if params.get("x_axis") else []
        columns += list(params.get("groupby") or [])
        metrics = list(params.get("metrics") or [])
    filters, where = _filters(params.get("adhoc_filters") or [])
    query = {
        "columns": columns,
        **({} if metrics is None else {"metrics": metrics}),
        "filters": filters + list(extra_filters or []),
        "extras": {"where": where, "having": ""},
        "row_limit": params.get("row_limit", 10000),
        "orderby": orderby,
    }
    return {
        "datasource": {"id": chart["datasource_id"], "type": "table"},
        "queries": [query],
        "form_data": params,
        "result_format": "json",
        "result_type": "full",
        "force": True,
    }
