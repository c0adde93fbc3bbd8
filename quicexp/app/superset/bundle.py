"""The Superset bundle in ``dashboards/``: rendering it for an installation, normalising exports.

The repository holds the *canonical* bundle: schema ``gold``, a credential-free
``sqlalchemy_uri`` with the default port, assets linked by UUID and no instance ids (chart ids
inside a dashboard's layout are local placeholders 1..n, remapped by UUID at import). Rendering
fills in the installation's Thrift port and gold schema; normalising an export does the reverse
and strips what an instance adds (ids, ``null`` defaults, query contexts, timestamps), so a
round trip through the UI gives a reviewable diff. Pure functions over dicts plus thin file I/O.
"""

from __future__ import annotations

import copy
import io
import re
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from quicexp.config import REPO_ROOT, ConfigError, Settings, validate_identifier

BUNDLE_DIR = REPO_ROOT / "dashboards"
CANONICAL_SCHEMA = "gold"
CANONICAL_URI = "hive://127.0.0.1:10000/default"
METADATA = {"version": "1.0.0", "type": "assets", "timestamp": "1970-01-01T00:00:00+00:00"}
_ASSET_DIRS = ("databases", "datasets", "charts", "dashboards")

# Keys an instance adds to chart params that refer to its own ids or are UI-only state.
_INSTANCE_PARAM_KEYS = {"datasource", "slice_id", "dashboards", "url_params", "extra_form_data"}
# Optional keys the canonical bundle leaves out when null; rendering spells them out as null,
# because Superset's overwrite import keeps an existing value for a key that is absent.
_COLUMN_KEYS = (
    "expression",
    "description",
    "verbose_name",
    "python_date_format",
    "advanced_data_type",
)
_METRIC_KEYS = (
    "description",
    "verbose_name",
    "d3format",
    "warning_text",
    "currency",
    "metric_type",
)
# Dashboard metadata keys that refer to instance ids of charts.
_INSTANCE_DASHBOARD_KEYS = {
    "chart_configuration",
    "global_chart_configuration",
    "positions",
    "map_label_colors",
}
# Dashboard metadata lists a browser view of the dashboard writes back: the palette of its
# color_scheme and the series labels the charts drew. UI state, empty in the bundle.
_VIEWED_DASHBOARD_KEYS = {"color_scheme_domain", "shared_label_colors"}


#: Superset's placeholder for a password it keeps encrypted apart from the URI.
PASSWORD_MASK = "X" * 10


def lake_uri(settings: Settings, user: str | None = None) -> str:
    """The SQLAlchemy URI of the lake database (the Thrift server, pyhive).

    Without ``user``: credential-free (the canonical form). With it: the user, Superset's
    password mask and ``auth=CUSTOM``; the password itself travels beside the bundle
    (``passwords`` of Superset's importer), never inside it.
    """
    where = f"{settings.services.bind_host}:{settings.services.thrift_port}/default"
    if user is None:
        return f"hive://{where}"
    return f"hive://{user}:{PASSWORD_MASK}@{where}?auth=CUSTOM"


def load_bundle(root: Path = BUNDLE_DIR) -> dict[str, dict[str, Any]]:
    """Read the bundle as {relative path: parsed YAML}."""
    if not (root / "metadata.yaml").exists():
        raise ConfigError(f"{root} holds no Superset bundle (metadata.yaml missing)")
    files = {}
    for path in sorted(root.rglob("*.yaml")):
        rel = path.relative_to(root).as_posix()
        try:
            files[rel] = yaml.safe_load(path.read_text())
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path} is not valid YAML: {exc}".splitlines()[0]) from None
    return files


def _swap_schema(sql: str | None, old: str, new: str) -> str | None:
    if sql is None or old == new:
        return sql
    return re.sub(rf"\b{re.escape(old)}\.", f"{new}.", sql)


def render(
    files: dict[str, dict[str, Any]], settings: Settings, user: str | None = None
) -> dict[str, dict[str, Any]]:
    """The bundle as this installation imports it: its Thrift URI (with ``user`` and the
    password mask when given) and its gold schema."""
    schema = validate_identifier(settings.gold_schema, "gold schema")
    out = {}
    for rel, doc in copy.deepcopy(files).items():  # the caller's bundle is left as it was
        if rel.startswith("databases/"):
            doc["sqlalchemy_uri"] = lake_uri(settings, user)
        elif rel.startswith("datasets/"):
            if doc.get("schema") == CANONICAL_SCHEMA:
                doc["schema"] = schema
            doc["sql"] = _swap_schema(doc.get("sql"), CANONICAL_SCHEMA, schema)
            doc["columns"] = [{**dict.fromkeys(_COLUMN_KEYS), **c} for c in doc.get("columns", [])]
            doc["metrics"] = [{**dict.fromkeys(_METRIC_KEYS), **m} for m in doc.get("metrics", [])]
        elif rel == "metadata.yaml":
            doc = dict(METADATA)
        out[rel] = doc
    return out


def to_zip(files: dict[str, dict[str, Any]], root: str = "bundle") -> bytes:
    """A zip Superset's importer accepts (one top folder)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for rel, doc in sorted(files.items()):
            archive.writestr(
                f"{root}/{rel}", yaml.safe_dump(doc, sort_keys=True, allow_unicode=True)
            )
    return buffer.getvalue()


def read_zip(data: bytes) -> dict[str, dict[str, Any]]:
    """Parse an exported zip into {path below the top folder: YAML}."""
    files = {}
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for name in archive.namelist():
            if not name.endswith(".yaml"):
                continue
            rel = name.split("/", 1)[1] if "/" in name else name
            files[rel] = yaml.safe_load(archive.read(name))
    return files


def _drop_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_nulls(v) for v in value]
    return value


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_") or "asset"


def _normalise_chart(doc: dict[str, Any]) -> dict[str, Any]:
    doc = dict(doc)
    doc.pop("query_context", None)
    doc.pop("id", None)
    params = {k: v for k, v in (doc.get("params") or {}).items() if k not in _INSTANCE_PARAM_KEYS}
    doc["params"] = params
    return doc


def _normalise_dashboard(doc: dict[str, Any]) -> dict[str, Any]:
    doc = dict(doc)
    doc.pop("id", None)
    position = dict(doc.get("position") or {})
    charts = [k for k, v in position.items() if isinstance(v, dict) and v.get("type") == "CHART"]
    for n, key in enumerate(
        sorted(charts, key=lambda k: (position[k]["meta"].get("uuid", ""), k)), 1
    ):
        position[key] = {**position[key], "meta": {**position[key]["meta"], "chartId": n}}
    doc["position"] = position
    metadata = {
        k: v for k, v in (doc.get("metadata") or {}).items() if k not in _INSTANCE_DASHBOARD_KEYS
    }
    for key in _VIEWED_DASHBOARD_KEYS & metadata.keys():
        metadata[key] = []
    filters = []
    for native in metadata.get("native_filter_configuration", []):
        native = {k: v for k, v in native.items() if k not in ("chartsInScope", "tabsInScope")}
        if "scope" in native:
            native["scope"] = {**native["scope"], "excluded": []}
        filters.append(native)
    metadata["native_filter_configuration"] = filters
    metadata.pop("filter_scopes", None)
    doc["metadata"] = metadata
    return doc


def normalise(files: dict[str, dict[str, Any]], settings: Settings) -> dict[str, dict[str, Any]]:
    """An export turned back into the canonical bundle (stable names, no instance data)."""
    schema = settings.gold_schema
    out: dict[str, dict[str, Any]] = {"metadata.yaml": dict(METADATA)}
    for rel, doc in copy.deepcopy(files).items():  # the export is left as it was
        kind = rel.split("/", 1)[0]
        if kind not in _ASSET_DIRS or not isinstance(doc, dict):
            continue
        if kind == "databases":
            doc = {**doc, "sqlalchemy_uri": CANONICAL_URI}
            doc.pop("password", None)
            name = _slug(doc.get("database_name", "database"))
            target = f"databases/{name}.yaml"
        elif kind == "datasets":
            doc = dict(doc)
            if doc.get("schema") == schema:
                doc["schema"] = CANONICAL_SCHEMA
            doc["sql"] = _swap_schema(doc.get("sql"), schema, CANONICAL_SCHEMA)
            for column in doc.get("columns", []):
                column.pop("id", None)
            doc.get("columns", []).sort(key=lambda c: c["column_name"])
            doc.get("metrics", []).sort(key=lambda m: m["metric_name"])
            target = f"datasets/{rel.split('/')[1]}/{_slug(doc['table_name'])}.yaml"
        elif kind == "charts":
            doc = _normalise_chart(doc)
            target = f"charts/{_slug(doc['slice_name'])}.yaml"
        else:
            doc = _normalise_dashboard(doc)
            target = f"dashboards/{_slug(doc.get('slug') or doc['dashboard_title'])}.yaml"
        out[target] = _drop_nulls(doc)
    return out


def write_bundle(files: dict[str, dict[str, Any]], root: Path = BUNDLE_DIR) -> list[Path]:
    """Replace the bundle's YAML files under ``root`` with ``files``; return the written paths."""
    for sub in _ASSET_DIRS:
        for old in (root / sub).rglob("*.yaml"):
            old.unlink()
    written = []
    for rel, doc in sorted(files.items()):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(doc, sort_keys=True, allow_unicode=True, width=100))
        written.append(path)
    return written


def uuid_links(files: dict[str, dict[str, Any]]) -> Iterable[str]:
    """Broken UUID links of the bundle, as messages (empty when the graph is closed)."""
    uuids = {rel.split("/", 1)[0]: set() for rel in files}
    for rel, doc in files.items():
        uuids.setdefault(rel.split("/", 1)[0], set()).add(str(doc.get("uuid")))
    for rel, doc in files.items():
        if rel.startswith("datasets/") and doc["database_uuid"] not in uuids.get(
            "databases", set()
        ):
            yield f"{rel}: unknown database {doc['database_uuid']}"
        if rel.startswith("charts/") and doc["dataset_uuid"] not in uuids.get("datasets", set()):
            yield f"{rel}: unknown dataset {doc['dataset_uuid']}"
        if rel.startswith("dashboards/"):
            for node in doc["position"].values():
                if isinstance(node, dict) and node.get("type") == "CHART":
                    if node["meta"]["uuid"] not in uuids.get("charts", set()):
                        yield f"{rel}: unknown chart {node['meta']['uuid']}"
            for native in doc["metadata"].get("native_filter_configuration", []):
                for target in native.get("targets", []):
                    if target.get("datasetUuid") and target["datasetUuid"] not in uuids.get(
                        "datasets", set()
                    ):
                        yield f"{rel}: filter {native['id']} targets unknown dataset {target['datasetUuid']}"
