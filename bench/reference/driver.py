"""Run the DuckDB reference: landing files → ingest counts + gold sufficient statistics.

``run_reference(landing_root, days, registry_file, out_dir)`` renders bench/reference/ingest.sql
per event kind (the telemetry schema gives the fields and types) and gold.sql (from
registry/metrics.yml and dbt_project.yml's vars, the way the dbt macros render the models),
runs them in one DuckDB connection (all cores) and writes Parquet to ``out_dir``:
``audit`` (per kind, upload day and file), ``quarantine`` (counts per kind, day and reason),
``sufficient_stats`` and ``binned``. Returns seconds per stage.
"""

from __future__ import annotations

import gzip
import json
import time
import zlib
from datetime import date
from pathlib import Path

import jinja2
import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]

DUCK_TYPES = {"string": "VARCHAR", "long": "BIGINT", "double": "DOUBLE", "boolean": "BOOLEAN",
              "timestamp": "TIMESTAMPTZ", "map<string,string>": "MAP(VARCHAR, VARCHAR)"}
SEGMENT_COLUMNS = ["platform", "network_type", "rtt_bucket", "loss_bucket", "bandwidth_bucket"]
STAT_COLUMNS = ["sum_y", "sum_y2", "sum_x", "sum_x2", "sum_xy", "sum_c", "sum_c2", "sum_yc", "sum_d",
                "sum_d2", "sum_cd", "sum_yd", "sum_xc", "sum_xd"]
PRE_COLUMNS = STAT_COLUMNS[5:]
ZERO_BIN = -1000000000
METRIC_DEFAULTS = {"filter": "true", "denominator": None, "quantiles": [0.5, 0.9, 0.95, 0.99],
                   "segments": None, "histogram_of": None, "guardrail": False}
JSON_SUFFIXES = (".jsonl", ".jsonl.gz", ".json", ".json.gz")
GZIP_MAGIC = b"\x1f\x8b"
PARQUET_MAGIC = b"PAR1"


def dbt_vars() -> dict:
    return yaml.safe_load((REPO / "dbt_project.yml").read_text())["vars"]


def registry_metrics() -> list[dict]:
    doc = yaml.safe_load((REPO / "registry" / "metrics.yml").read_text())
    return [{**METRIC_DEFAULTS, **m} for m in doc["metrics"]]


def _sql_literal_list(items: list[str]) -> str:
    return "[" + ", ".join("'" + s.replace("'", "''") + "'" for s in items) + "]"


# --- ingest rendering ----------------------------------------------------------------------

def _json_value(f, i: int) -> str:
    t, s = f"t[{i}]", f"s[{i}]"
    return {
        "string": f"case when {t} = 'VARCHAR' then {s} end",
        "long": f"case when {t} in ('BIGINT', 'UBIGINT') then try_cast({s} as bigint) end",
        "double": f"case when {t} in ('BIGINT', 'UBIGINT', 'DOUBLE') then try_cast({s} as double) end",
        "boolean": f"case when {t} = 'BOOLEAN' then {s} = 'true' end",
        "timestamp": f"case when {t} = 'VARCHAR' then try_cast({s} as timestamptz) end",
        # a map of strings: every value a JSON string (a number, null or nested object is wrong_type)
        "map<string,string>": f"case when {t} = 'OBJECT' and len(list_filter(json_type(v, '$.{f.name}.*'), "
                              f"lambda x: x is distinct from 'VARCHAR')) = 0 "
                              f"then try_cast(json_extract(v, '$.{f.name}') as map(varchar, varchar)) end",
    }[f.type]


# Text DuckDB's JSON parser accepts and strict JSON does not: NaN / Infinity (any case, DuckDB
# takes `nan`, `inf`), a trailing comma; and whitespace before a key's colon (ingest.sql counts
# keys by their `":`). Matching records are judged by json_reason().
SUSPECT = r'(^|[:\[,])[ \t\r\n]*[-+]?([nN][aA][nN]|[iI][nN][fF])|,[ \t\r\n]*[]}]|"[ \t\r\n]+:'
_JSON_WS = " \t\n\r"


def _reject_constant(name: str) -> float:
    raise ValueError(name)


def _reject_duplicates(pairs: list) -> dict:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise ValueError("duplicate key")
    return obj


_STRICT = json.JSONDecoder(parse_constant=_reject_constant, object_pairs_hook=_reject_duplicates)


def json_reason(text: str | None) -> str | None:
    """The JSON-level reason of one record (docs/ingestion.md), for the records SQL cannot judge."""
    if text is None:  # not UTF-8
        return "malformed_json"
    body = text.lstrip(_JSON_WS)
    try:
        value, end = _STRICT.raw_decode(body)
    except (ValueError, RecursionError):
        return "malformed_json"
    if body[end:].strip(_JSON_WS):
        return "trailing_data"
    return None if type(value) is dict else "not_an_object"


# --- landing files -------------------------------------------------------------------------

def read_lines(path: Path):
    """The records of one JSON-lines file as an Arrow binary array, or None when the file cannot
    be read. A record is a line ended by "\\n" (a "\\r" right before it belongs to the ending, a
    bare "\\r" does not end a record); the last line needs no "\\n". Split with numpy on the
    whole buffer: no Python object per record."""
    import numpy as np
    import pyarrow as pa

    try:
        with path.open("rb") as fh:
            data = fh.read()
        if path.name.endswith(".gz"):
            if data[:2] != GZIP_MAGIC:
                return None
            data = gzip.decompress(data)
    except (OSError, EOFError, zlib.error):
        return None
    if not data:
        return pa.array([], pa.large_binary())
    raw = np.frombuffer(data, np.uint8)
    newlines = np.flatnonzero(raw == 10)
    ends = newlines if data.endswith(b"\n") else np.append(newlines, len(raw))
    starts = np.concatenate(([0], newlines + 1))[: len(ends)]
    crlf = (ends > starts) & (raw[np.maximum(ends - 1, 0)] == 13)
    keep = np.ones(len(raw), bool)
    keep[newlines] = False
    keep[ends[crlf] - 1] = False
    ends = ends - crlf
    offsets = np.concatenate(([0], np.cumsum(ends - starts))).astype(np.int64)
    return pa.LargeBinaryArray.from_buffers(pa.large_binary(), len(ends),
                                            [None, pa.py_buffer(offsets), pa.py_buffer(raw[keep].tobytes())])


def parquet_schema(path: Path):
    """The footer schema of a Parquet file, or None when it is not one."""
    import pyarrow.parquet as pq

    try:
        with path.open("rb") as fh:
            head = fh.read(4)
            fh.seek(-4, 2)
            tail = fh.read(4)
        if head != PARQUET_MAGIC or tail != PARQUET_MAGIC:
            return None
        return pq.read_schema(path).remove_metadata()
    except Exception:
        return None


def range_checks(fields) -> list[tuple[str, str]]:
    """Per field with declared bounds (telemetry schema ``minimum``/``maximum``, inclusive), in field
    order: the condition under which a value is outside them (a NaN is outside any range)."""
    checks = []
    for f in fields:
        if f.minimum is None and f.maximum is None:
            continue
        outside = [f"isnan({f.name})"] if f.type == "double" else []
        outside += [f"{f.name} < {f.minimum!r}"] if f.minimum is not None else []
        outside += [f"{f.name} > {f.maximum!r}"] if f.maximum is not None else []
        checks.append((f.name, f"{f.name} is not null and ({' or '.join(outside)})"))
    return checks


def arrow_compatible(expected: str, actual) -> bool:
    """Lossless only (docs/ingestion.md): integers widen to double, any timestamp unit is a timestamp."""
    import pyarrow as pa

    t = pa.types
    if t.is_dictionary(actual):
        actual = actual.value_type
    if t.is_null(actual):
        return True
    return {
        "string": lambda: t.is_string(actual) or t.is_large_string(actual),
        "long": lambda: t.is_integer(actual),
        "double": lambda: t.is_floating(actual) or t.is_integer(actual),
        "boolean": lambda: t.is_boolean(actual),
        "timestamp": lambda: t.is_timestamp(actual),
        "map<string,string>": lambda: t.is_map(actual) and arrow_compatible("string", actual.key_type)
        and arrow_compatible("string", actual.item_type),
    }[expected]()


def _parquet_source(day: str, files: list[str], schema, fields) -> dict:
    present = {f.name: f.type for f in schema}
    columns, reasons = {}, []
    for f in fields:
        duck = DUCK_TYPES[f.type]
        name = '"' + f.name + '"'
        if f.name in present and arrow_compatible(f.type, present[f.name]):
            columns[f.name] = f"cast({name} as {duck})"
            if not f.nullable:
                reasons.append(f"case when {name} is null then 'missing_field:{f.name}' end")
        elif f.name in present:
            columns[f.name] = f"null::{duck}"
            reasons.append(f"case when {name} is not null then 'wrong_type:{f.name}' end")
            if not f.nullable:
                reasons.append(f"case when {name} is null then 'missing_field:{f.name}' end")
        else:
            columns[f.name] = f"null::{duck}"
            if not f.nullable:
                reasons.append(f"'missing_field:{f.name}'")
    return {"day": day, "files": _sql_literal_list(files), "columns": columns, "reasons": reasons}


def day_files(landing_root: Path, day: date, kind: str) -> list[Path]:
    folder = landing_root / f"upload_date={day.isoformat()}" / kind
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith(("_", ".")))


def render_ingest(env: jinja2.Environment, con, landing_root: Path, days: list[date], kind: str,
                  settings) -> str | None:
    """The ingest SQL of ``kind``; JSON-lines records are registered on ``con`` as Arrow tables."""
    import numpy as np
    import pyarrow as pa

    from quicexp import telemetry

    fields = telemetry.fields(kind)
    json_sources, parquet_sources, unreadable = [], [], []
    for day in days:
        files, lines, bad = [], [], []
        groups: dict = {}
        for p in day_files(landing_root, day, kind):
            if p.name.endswith(JSON_SUFFIXES):
                records = read_lines(p)
                if records is None:
                    bad.append(str(p))
                elif len(records):
                    files.append(pa.DictionaryArray.from_arrays(pa.array(np.zeros(len(records), np.int32)),
                                                                pa.array([str(p)])))
                    lines.append(records)
            elif p.name.endswith(".parquet") and (schema := parquet_schema(p)) is not None:
                groups.setdefault(schema, []).append(str(p))
            else:  # no reader knows it, or it is not what its name says
                bad.append(str(p))
        if lines:
            table = f"{kind}__lines_{len(json_sources)}"
            con.register(table, pa.table({"source_file": pa.chunked_array(files), "line": pa.chunked_array(lines)}))
            json_sources.append({"day": day.isoformat(), "table": table})
        parquet_sources += [_parquet_source(day.isoformat(), g, schema, fields) for schema, g in groups.items()]
        if bad:
            unreadable.append({"day": day.isoformat(), "files": _sql_literal_list(bad)})
    if not json_sources and not parquet_sources and not unreadable:
        return None
    return env.get_template("ingest.sql").render(
        kind=kind, fields=fields, json_sources=json_sources, parquet_sources=parquet_sources,
        unreadable=unreadable, range_checks=range_checks(fields), json_value=_json_value, duck_type=lambda t: DUCK_TYPES[t],
        suspect=SUSPECT.replace("'", "''"),
        lookback_days=settings.ingest.lookback_days,
        future_tolerance_minutes=settings.ingest.future_tolerance_minutes,
        event_type=telemetry.event_type(kind), schema_version=telemetry.SCHEMA_VERSION,
    )


# --- gold rendering ------------------------------------------------------------------------

SPARK_TO_DUCK = {"string": "VARCHAR", "bigint": "BIGINT", "double": "DOUBLE", "date": "DATE",
                 "timestamp": "TIMESTAMPTZ", "map<string,string>": "MAP(VARCHAR, VARCHAR)"}


def _no_rows(_schema: str, _table: str, columns: dict[str, str]) -> str:
    """The dbt macro optional_source for a source the reference does not ingest (qlog traces: the
    shared pipeline lake has none, so the pipeline's table is empty too): no rows, typed columns."""
    return "(select " + ", ".join(f"cast(null as {SPARK_TO_DUCK[t]}) as {n}" for n, t in columns.items()) + " where false)"


def staging_sql(model: str) -> str:
    """models/staging/stg_telemetry__<model>.sql over the reference's bronze table (plain SQL renames).
    Every day the reference loads is finished (it writes no run table), so the staging models'
    finished-day filter is empty here."""
    text = (REPO / "models" / "staging" / f"stg_telemetry__{model}.sql").read_text()
    return jinja2.Template(text).render(source=lambda _schema, table: f"{table}__bronze",
                                        optional_source=_no_rows, where_finished_upload_day=lambda *_: "")


def render_gold(env: jinja2.Environment, run_day: date) -> str:
    v = dbt_vars()
    metrics = registry_metrics()
    w = v["quantile_bin_width"]
    sums = [m for m in metrics if m["kind"] in ("mean", "proportion", "ratio")]
    sources = list(dict.fromkeys(m["source"] for m in sums))
    quantile = [m for m in metrics if m["kind"] == "quantile"]
    combos = v.get("segment_combinations", [])

    def bucket(expression: str, name: str) -> str:
        spec = v["segment_buckets"][name]
        whens = "".join(f" when {expression} < {e} then '{label}'" for e, label in zip(spec["edges"], spec["labels"][:-1], strict=True))
        return f"case when {expression} is null then 'unknown'{whens} else '{spec['labels'][-1]}' end"

    def segments(alias: str) -> str:
        items = ["{'segment_type': 'overall', 'segment_value': 'all'}"]
        items += [f"{{'segment_type': '{c}', 'segment_value': {alias}.{c}}}" for c in SEGMENT_COLUMNS]
        items += [f"{{'segment_type': '{'×'.join(combo)}', 'segment_value': concat_ws('|', "
                  + ", ".join(f"{alias}.{c}" for c in combo) + ")}" for combo in combos]
        return "[" + ", ".join(items) + "]"

    def segment_filter(metric_col: str, type_col: str) -> str:
        parts = [f"({metric_col} = '{m['name']}' and {type_col} not in ({', '.join(repr(s) for s in m['segments'])}))"
                 for m in metrics if m["segments"] is not None]
        return f"not ({' or '.join(parts)})" if parts else "true"

    def unit_value(kind, num, den, n) -> str:
        return (f"case when {n} = 0 then 0.0 when {kind} = 'ratio' then {num} "
                f"when {kind} = 'proportion' then case when {num} > 0 then 1.0 else 0.0 end "
                f"when {den} is null then {num} else {num} / nullif({den}, 0) end")

    def bin_value(b: str) -> str:
        return f"case when {b} = {ZERO_BIN} then 0.0 else exp(({b} + 0.5) * ln(1.0 + {w})) end"

    return env.get_template("gold.sql").render(
        run_day=f"date '{run_day.isoformat()}'", vars=v, metrics=metrics, zero_bin=ZERO_BIN,
        sums_sources=sources, sums_metrics={s: [m for m in sums if m["source"] == s] for s in sources},
        binned_metrics=[m for m in quantile if not m["histogram_of"]], quantile_metrics=quantile,
        bucket=bucket, segments=segments, segment_filter=segment_filter, unit_value=unit_value,
        bin_value=bin_value, pre_columns=PRE_COLUMNS, stat_columns=STAT_COLUMNS,
    )


# --- run -----------------------------------------------------------------------------------

#: DuckDB's share of the machine's memory; the rest is for the Python UDF and the OS.
MEMORY_SHARE = 0.4


def memory_limit_mib() -> int:
    import os

    return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") * MEMORY_SHARE / 2**20)


def run_reference(landing_root: Path, days: list[date], registry_file: Path, out_dir: Path,
                  threads: int | None = None, progress=print) -> dict[str, float]:
    import duckdb

    from quicexp import telemetry
    from quicexp.config import load_settings
    from quicexp.registry import load_registry

    settings = load_settings()
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE), undefined=jinja2.StrictUndefined,
                             extensions=["jinja2.ext.do"])
    out_dir.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    con.execute("set preserve_insertion_order = false")
    # DuckDB's own default (80 % of RAM) leaves no room for the JSON check's Python UDF, whose
    # strings live outside DuckDB's accounting: a 10 M-event JSON-lines day grew past 24 GiB and
    # was killed. A smaller limit and a spill folder let DuckDB page its tables out instead.
    con.execute(f"set memory_limit = '{memory_limit_mib()}MiB'")
    con.execute(f"set temp_directory = '{out_dir / '_spill'}'")
    if threads:
        con.execute(f"set threads = {int(threads)}")
    con.create_function("json_reason", json_reason, ["VARCHAR"], "VARCHAR", null_handling="special",
                        side_effects=False)
    seconds: dict[str, float] = {}

    started = time.perf_counter()
    kinds = []
    for kind in telemetry.EVENT_KINDS:
        sql = render_ingest(env, con, landing_root, days, kind, settings)
        if sql is None:
            con.execute(f"create or replace temp table {kind}__bronze as select "
                        + ", ".join(f"null::{DUCK_TYPES[f.type]} as {f.name}" for f in telemetry.fields(kind))
                        + ", null::date as event_date, null::date as upload_date, null::varchar as source_file limit 0")
            continue
        con.execute(sql)
        kinds.append(kind)
    if kinds:
        union = " union all ".join(
            f"select '{k}' as kind, upload_date, source_file, status, reason, event_date from {k}__classified" for k in kinds)
        con.execute(f"create or replace temp table classified as {union}")
        con.execute(f"""copy (select kind, upload_date, regexp_extract(source_file, '[^/]+$') as file,
                   count(*) as rows_read, count(*) filter (status = 'loaded') as rows_loaded,
                   count(*) filter (status = 'quarantined') as rows_quarantined,
                   count(*) filter (status = 'duplicate') as rows_duplicate,
                   count(*) filter (status = 'loaded' and event_date < upload_date) as rows_late
            from classified group by all) to '{out_dir / "audit.parquet"}' (format parquet)""")
        con.execute(f"""copy (select kind, upload_date, reason, count(*) as n from classified
            where status = 'quarantined' group by all) to '{out_dir / "quarantine.parquet"}' (format parquet)""")
    seconds["ingest"] = time.perf_counter() - started
    progress(f"reference ingest: {seconds['ingest']:.1f}s")

    started = time.perf_counter()
    registry = load_registry(registry_file)
    arms = [(e.id, a.name, a.is_control, e.start_date, e.end_date) for e in registry.experiments for a in e.arms]
    con.execute("create or replace temp table arms (experiment_id varchar, arm varchar, is_control boolean, "
                "start_date date, end_date date)")
    if arms:
        con.executemany("insert into arms values (?, ?, ?, ?, ?)", arms)
    for kind in telemetry.EVENT_KINDS:  # the staging views, from the staging models themselves
        con.execute(f"create or replace temp view {kind}__stg as " + staging_sql(kind))
    con.execute("create or replace temp view qlog_connections__stg as " + staging_sql("qlog_connections"))
    con.execute(render_gold(env, max(days)))
    con.execute(f"copy sufficient_stats to '{out_dir / 'sufficient_stats.parquet'}' (format parquet)")
    con.execute(f"copy binned to '{out_dir / 'binned.parquet'}' (format parquet)")
    seconds["gold"] = time.perf_counter() - started
    progress(f"reference gold: {seconds['gold']:.1f}s")
    con.close()
    return seconds
