"""The metric registry (registry/metrics.yml): one typed model, found through Settings, loud on
bad input; dbt's Jinja checks and the pydantic model accept and reject the same entries (plain
text fields, filters inside the one grammar); dbt reads the file Settings names, as data, never
as a template; the report and the dashboards name only registered metrics."""

from __future__ import annotations

import copy
import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from quicexp.config import REPO_ROOT, ConfigError, load_settings
from quicexp.metrics import (
    EVENT_SOURCES,
    filter_grammar,
    load_metrics,
    parse_metrics,
    segment_types,
)

REGISTRY = REPO_ROOT / "registry" / "metrics.yml"
DOC = yaml.safe_load(REGISTRY.read_text())
NEW_METRIC = {
    "name": "handshake_time",
    "description": "Time to complete the handshake, mean over connections.",
    "kind": "mean",
    "source": "connections",
    "numerator": "srtt_ms",
    "unit": "ms",
    "direction": "decrease",
    "label": "handshake time",
}


def _text(doc: dict) -> str:
    """A registry file's text."""
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)


def _macro(doc: dict) -> str:
    """A stand-in for macros/metric_registry.sql giving dbt ``doc`` as data, the way the var
    does (its text is not rendered), but as a macro: dbt's partial parsing then re-reads only it
    (a new var would make dbt parse the whole project again, about 2 s a variant)."""
    body = _text(doc)
    assert "endraw" not in body
    return ("{% macro metric_registry_document() %}{% set text %}{% raw %}" + body
            + "{% endraw %}{% endset %}{{ return(fromyaml(text)) }}{% endmacro %}\n")  # fmt: skip


def _first(**changes) -> dict:
    """The real registry with the first entry changed (a value None removes the field)."""
    doc = copy.deepcopy(DOC)
    entry = doc["metrics"][0]
    for key, value in changes.items():
        if value is None:
            entry.pop(key, None)
        else:
            entry[key] = value
    return doc


def _added(**changes) -> dict:
    doc = copy.deepcopy(DOC)
    doc["metrics"].append({**NEW_METRIC, **changes})
    return doc


def _every_source_and_segment_type() -> dict:
    """One new metric per source Python knows, each reported for every segment type it knows."""
    doc = copy.deepcopy(DOC)
    for source in EVENT_SOURCES:
        doc["metrics"].append({**NEW_METRIC, "name": f"n_{source}", "source": source,
                               "segments": list(segment_types())})  # fmt: skip
    return doc


def _quantile_first(**changes) -> dict:
    doc = copy.deepcopy(DOC)
    entry = next(m for m in doc["metrics"] if m["kind"] == "quantile")
    entry.update(changes)
    return doc


GRAMMAR_FILTER = (
    "(platform in ('Windows', 'Linux') and latency_ms between 0 and 6e4)"
    " OR NOT is_new_connection and status_code <> -1"
)
#: (variant, registry document, accepted?)
VARIANTS = [
    ("the registry", DOC, True),
    ("a new metric, defaults for group and scale", _added(), True),
    ("a bare-number denominator", _added(kind="ratio", denominator=1), True),
    ("a two-way segment type", _added(segments=["overall", "platform×rtt_bucket"]), True),
    ("display facts set", _added(group="transport", scale=1000, guardrail=True), True),
    ("every source and segment type", _every_source_and_segment_type(), True),
    ("unknown kind", _first(kind="rattio"), False),
    ("unknown source", _first(source="dns_queries"), False),
    ("bad name", _first(name="RequestLatency"), False),
    ("no name", _added(name=None), False),
    ("duplicate name", _added(name="request_latency"), False),
    ("quantile without a value", _quantile_first(value=""), False),
    ("mean without a numerator", _added(numerator=None), False),
    ("ratio without a denominator", _added(kind="ratio"), False),
    ("quantile outside (0, 1)", _quantile_first(quantiles=[0.5, 1.0]), False),
    ("quantile as text", _quantile_first(quantiles=["0.5"]), False),
    ("unknown segment type", _added(segments=["overall", "country"]), False),
    ("histogram_of names no metric", _quantile_first(histogram_of="nope"), False),
    ("misspelt field", _added(denominater="1"), False),
    ("no label", _first(label=None), False),
    ("empty label", _first(label=""), False),
    ("no description", _first(description=None), False),
    ("no unit", _first(unit=None), False),
    ("no direction", _first(direction=None), False),
    ("direction up", _first(direction="up"), False),
    ("guardrail yes", _first(guardrail="yes"), False),
    ("unknown group", _first(group="misc"), False),
    ("scale zero", _first(scale=0), False),
    ("scale as text", _first(scale="100"), False),
    ("a default non-inferiority margin", _added(margin=0.02), True),
    ("an absolute margin", _added(margin_absolute=1.5), True),
    ("a margin of zero", _added(margin=0), False),
    ("a margin as text", _added(margin="2%"), False),
    ("both margins", _added(margin=0.02, margin_absolute=1.0), False),
    # text fields are plain text: Jinja in them is refused, not run
    (
        "Jinja in a description",
        _first(description="Mean {{ run_query('drop table gold.x') }}"),
        False,
    ),
    ("a Jinja statement in a label", _first(label="latency {% do run_query('select 1') %}"), False),
    ("a line break in a unit", _first(unit="ms\nreally"), False),
    # filters: columns of the source, literals, comparisons, and/or/not; nothing else
    ("a filter of the grammar", _first(filter=GRAMMAR_FILTER), True),
    (
        "a filter with TRANSFORM",
        _first(filter="latency_ms in (select transform(latency_ms) using 'id' as (x) from t)"),
        False,
    ),
    (
        "a filter calling reflect",
        _first(filter="reflect('java.lang.Runtime', 'getRuntime') is not null"),
        False,
    ),
    ("a filter with a comment", _first(filter="latency_ms > 0 -- and false"), False),
    ("a filter with two statements", _first(filter="latency_ms > 0; select 1"), False),
    ("a filter with a quoted identifier", _first(filter="`latency_ms` > 0"), False),
    ("a filter with an escaped quote", _first(filter="protocol = 'h3\\' or 1 = 1"), False),
    ("a filter on another source's column", _first(filter="vantage_point = 'client'"), False),
    (
        "a filter closing a parenthesis it did not open",
        _first(filter="latency_ms > 0) or (true"),
        False,
    ),
    ("a filter that is not text", _first(filter=True), False),
]


def _python_accepts(doc: dict, types: tuple[str, ...]) -> bool:
    try:
        parse_metrics(_text(doc), "variant", types)
    except ConfigError:
        return False
    return True


@pytest.fixture(scope="module")
def dbt_project(tmp_path_factory) -> Path:
    """The project's dbt_project.yml, profile and macros (all of them: the validators are
    macros/metrics.sql and macros/metric_registry_checks.sql) with one model that reads the
    registry the way every metric model does (metric_registry())."""
    root = tmp_path_factory.mktemp("dbt_registry")
    shutil.copy(REPO_ROOT / "dbt_project.yml", root)
    shutil.copy(REPO_ROOT / "profiles.yml", root)
    (root / "macros").mkdir()
    for path in (REPO_ROOT / "macros").glob("*.sql"):
        shutil.copy(path, root / "macros" / path.name)
    (root / "models").mkdir()
    (root / "models" / "registry_check.sql").write_text(
        "{{ config(meta={'metrics': metric_registry() | map(attribute='name') | list}) }}\n"
        "select 1 as n\n"
    )
    return root


def _parse(project: Path, *extra: str):
    """``dbt parse`` of ``project`` in process; the result (its manifest on success)."""
    from dbt.cli.main import dbtRunner

    return dbtRunner().invoke([
        "parse", "--project-dir", str(project), "--profiles-dir", str(project),
        "--target-path", str(project / "target"), "--log-path", str(project / "logs"),
        "--quiet", "--no-write-json", "--no-version-check", "--no-send-anonymous-usage-stats",
        *extra,
    ])  # fmt: skip


def test_dbt_and_python_accept_and_reject_the_same_entries(dbt_project):
    """Each variant through the pydantic model and through `dbt parse` (in process, partial
    parsing: only the changed registry macro is re-read), results equal."""
    types = segment_types(dbt_project / "dbt_project.yml")
    outcomes = {}
    for name, doc, expected in VARIANTS:
        (dbt_project / "macros" / "metric_registry.sql").write_text(_macro(doc))
        result = _parse(dbt_project)
        dbt_ok = result.success
        if not dbt_ok:  # rejected by a registry check, not by something else
            assert "registry/metrics.yml" in str(result.exception) or "quantile" in name, (
                name, result.exception)  # fmt: skip
        outcomes[name] = (dbt_ok, _python_accepts(doc, types), expected)
    wrong = {n: o for n, o in outcomes.items() if len(set(o)) != 1}
    assert not wrong, f"(dbt, python, expected) differ: {wrong}"


@pytest.mark.parametrize(("name", "doc", "expected"), VARIANTS, ids=[v[0] for v in VARIANTS])
def test_the_model_accepts_and_rejects(name, doc, expected):
    assert _python_accepts(doc, segment_types()) is expected


def test_dbt_reads_the_file_settings_name_as_data_never_as_a_template(dbt_project, tmp_path):
    """The project's own macros/metric_registry.sql with the vars `quicexp dbt` passes
    (dbt_args): dbt sees the metrics of the file QUICEXP_METRICS_FILE names; Jinja in the text
    is not run (the plain-text check refuses it); without the var dbt stops with one line."""
    from datetime import date

    from quicexp.app.dbt import dbt_args

    shutil.copy(REPO_ROOT / "macros" / "metric_registry.sql", dbt_project / "macros")
    other = tmp_path / "metrics.yml"
    other.write_text(_text(_added()))
    args = dbt_args("parse", load_settings(home=tmp_path, metrics_file=other), date(2026, 6, 15))
    dbt_vars = args[args.index("--vars") + 1]
    parsed = _parse(dbt_project, "--vars", dbt_vars)
    assert parsed.success, parsed.exception
    meta = parsed.result.nodes["model.quicexp.registry_check"].config.meta
    assert meta["metrics"] == [m["name"] for m in _added()["metrics"]]

    ran = _text(_first(description="{{ exceptions.raise_compiler_error('the text ran') }}"))
    refused = _parse(dbt_project, "--vars", json.dumps({"metric_registry": yaml.safe_load(ran)}))
    assert not refused.success
    assert "description that is not plain text" in str(refused.exception), refused.exception

    missing = _parse(dbt_project)
    assert "run dbt through `quicexp dbt`" in str(missing.exception), missing.exception

    other.write_text(_text(_first(filter="reflect('java.lang.Runtime', 'getRuntime') is null")))
    with pytest.raises(ConfigError, match="filter names reflect, neither a column"):
        dbt_args("parse", load_settings(home=tmp_path, metrics_file=other), date(2026, 6, 15))


def _staging_columns(source: str) -> list[str]:
    """The output columns of models/staging/stg_telemetry__<source>.sql: its `renamed` select
    list, one column (or `expression as name`) a line."""
    sql = (REPO_ROOT / "models" / "staging" / f"stg_telemetry__{source}.sql").read_text()
    select = re.search(r"renamed as \(\s*select(.*?)\n\s*from (?:source|valid)", sql, re.S).group(1)
    lines = [ln.split("--")[0].strip().rstrip(",") for ln in select.splitlines()]
    return [re.split(r"\s+as\s+", ln)[-1] for ln in lines if ln]


@pytest.mark.parametrize("source", EVENT_SOURCES)
def test_the_filter_grammar_knows_the_staging_columns(source):
    assert filter_grammar()["columns"][source] == _staging_columns(source)


def test_the_registry_loads_through_settings(monkeypatch, tmp_path):
    registry = load_metrics()
    assert registry.get("request_latency").label == "mean request latency"
    assert registry.get("zero_rtt_share").higher_is_better
    assert registry.get("retransmit_rate").scale == 100
    other = tmp_path / "metrics.yml"
    other.write_text(_text(_added()))
    monkeypatch.setenv("QUICEXP_METRICS_FILE", str(other))
    assert load_settings().metrics_file == other
    assert "handshake_time" in load_metrics().names


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (None, "cannot read the metric registry"),
        ("metrics: [\n", "is not valid YAML"),
        ("[]\n", "metric registry"),
        (_text(_first(direction="up")), "metrics.request_latency.direction"),
        (_text(_added(name="request_latency")), "duplicate metric request_latency"),
    ],
    ids=["missing", "broken YAML", "not a mapping", "bad field", "duplicate"],
)
def test_a_bad_registry_fails_loudly_in_one_line(tmp_path, text, message):
    path = tmp_path / "metrics.yml"
    if text is not None:
        path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_metrics(path)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_the_report_takes_its_labels_from_the_configured_registry(monkeypatch, tmp_path):
    from reports.metrics import display

    path = tmp_path / "metrics.yml"
    path.write_text(_text(_added(label="time to handshake", group="transport")))
    monkeypatch.setenv("QUICEXP_METRICS_FILE", str(path))
    assert display("handshake_time").label == "time to handshake"
    assert display("handshake_time").group == "transport"
    path.write_text(_text(_first(kind="rattio")))
    with pytest.raises(ConfigError, match=r"request_latency\.kind"):
        display("request_latency")


def _chart_metrics() -> set[str]:
    from quicexp.app.superset.bundle import load_bundle

    names: set[str] = set()
    for path, doc in load_bundle().items():
        if not path.startswith("charts/"):
            continue
        for flt in (doc.get("params") or {}).get("adhoc_filters") or []:
            if flt.get("subject") == "metric":
                comparator = flt["comparator"]  # one name (==) or a list (IN)
                names.update(comparator if isinstance(comparator, list) else [comparator])
            names.update(
                re.findall(r"metric\s*<>\s*'([a-z0-9_]+)'", flt.get("sqlExpression") or "")
            )
    return names


def test_the_dashboards_name_only_registered_metrics():
    names = _chart_metrics()
    assert names, "no chart filters on a metric: the check would pass vacuously"
    assert names <= set(load_metrics().names), names - set(load_metrics().names)


def test_the_report_job_stops_on_a_missing_registry_before_any_spark(tmp_path):
    """jobs.report.run reads the metric registry first: a missing one is a one-line ConfigError
    and the Spark session (None here) is never touched."""
    from datetime import date

    import jobs.report

    settings = load_settings(home=tmp_path, metrics_file=tmp_path / "nope.yml")
    with pytest.raises(ConfigError, match="cannot read the metric registry"):
        jobs.report.run(None, settings, date(2026, 6, 17), "fhol_test")


def test_the_registry_knows_which_metrics_cannot_be_negative():
    """By unit: durations, sizes, rates, counts and shares are never negative (the stats engine
    rejects such rows); a metric in another unit is not constrained."""
    registry = parse_metrics(_text(_added(unit="dB")), "variant", segment_types())
    assert registry.get("request_latency_p").non_negative
    assert registry.get("retransmit_rate").non_negative  # a fraction
    assert not registry.get("handshake_time").non_negative
    assert "handshake_time" not in registry.non_negative_names
    assert "mtbr" in registry.non_negative_names
