"""A landing day with faults injected at exact, known positions, so ingestion can be reconciled exactly.

The simulator (simulation/) produces realistic faults at configured rates; this factory
produces the same kinds of faults at chosen counts and remembers which row got which, so
a test can demand every count and every reason, not only the totals.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from quicexp import telemetry


def ts(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def event(kind: str, day: date, i: int, *, prefix: str = "") -> dict:
    """A valid event of ``kind``: event ``i`` of ``day``, uploaded a minute after it happened."""
    at = datetime(day.year, day.month, day.day, tzinfo=UTC) + timedelta(seconds=20 * i)
    values = {
        "event_id": f"{prefix}{kind}-{day}-{i:06d}", "event_type": telemetry.event_type(kind), "schema_version": 1,
        "client_id": f"c{i % 97:03d}", "session_id": f"s{i % 211:04d}", "event_time": ts(at),
        "upload_time": ts(at + timedelta(minutes=1)), "platform": "android", "network_type": "wifi",
        "app": "browser", "app_version": "1.0", "experiments": {"exp1": "control" if i % 2 else "treatment"},
    }
    if kind == "http_transactions":
        values["status_code"] = 200  # within the schema's declared range
    by_type = {"string": lambda f: f"{f}-{i % 5}", "long": lambda f: i, "double": lambda f: i * 1.5,
               "boolean": lambda f: i % 3 == 0, "timestamp": lambda f: ts(at), "map<string,string>": lambda f: {}}
    for f in telemetry.fields(kind):
        values.setdefault(f.name, by_type[f.type](f.name))
    return values


@dataclass
class Expected:
    """What ingesting the day must give, per kind."""

    read: Counter = field(default_factory=Counter)
    loaded: Counter = field(default_factory=Counter)
    duplicate: Counter = field(default_factory=Counter)
    late: Counter = field(default_factory=Counter)
    reasons: dict[str, Counter] = field(default_factory=dict)

    def quarantine(self, kind: str, reason: str, n: int = 1) -> None:
        self.reasons.setdefault(kind, Counter())[reason] += n
        self.read[kind] += n


def first_field(kind: str, type_name: str) -> str:
    common = {f.name for f in telemetry.common_fields()}
    return next(f.name for f in telemetry.fields(kind) if f.type == type_name and not f.nullable and f.name not in common)


def json_day(kind: str, day: date, n: int, *, previous: tuple[date, int] | None = None) -> tuple[list[str], Expected]:
    """``n`` clean events plus 1% malformed, 1% schema-violating, 5% duplicate, 2% late, 1% skewed lines.

    With ``previous``, a further 1% are re-uploads of events first uploaded on ``previous``
    (cross-day duplicates; ``previous = (day, n)`` of an earlier ``json_day`` call).
    """
    exp = Expected()
    rows = [event(kind, day, i) for i in range(n)]
    lines = []
    long_field, double_field = first_field(kind, "long"), first_field(kind, "double")
    k = {name: max(1, round(rate * n)) for name, rate in
         (("malformed", .01), ("violation", .01), ("duplicate", .05), ("late", .02), ("skewed", .01))}
    for i, row in enumerate(rows):
        if i < k["violation"]:
            if i % 2:
                row.pop(double_field)
                exp.quarantine(kind, f"missing_field:{double_field}")
            else:
                row[long_field] = str(row[long_field])
                exp.quarantine(kind, f"wrong_type:{long_field}")
        elif i < k["violation"] + k["late"]:
            at = datetime.fromisoformat(row["upload_time"].replace("Z", "+00:00")) - timedelta(days=2)
            row["event_time"] = ts(at)
            exp.read[kind] += 1
            exp.loaded[kind] += 1
            exp.late[kind] += 1
        elif i < k["violation"] + k["late"] + k["skewed"]:
            at = datetime.fromisoformat(row["upload_time"].replace("Z", "+00:00")) + timedelta(hours=3)
            row["event_time"] = ts(at)
            exp.quarantine(kind, "clock_skew_future")
        else:
            exp.read[kind] += 1
            exp.loaded[kind] += 1
        lines.append(json.dumps(row))
    for i in range(k["duplicate"]):  # client retries: same event, uploaded again a bit later
        row = dict(rows[-1 - i])
        row["upload_time"] = ts(datetime.fromisoformat(row["upload_time"].replace("Z", "+00:00")) + timedelta(seconds=30))
        lines.append(json.dumps(row))
        exp.read[kind] += 1
        exp.duplicate[kind] += 1
    for i in range(k["malformed"]):
        lines.append('{"event_id": "truncated-' + str(i))
        exp.quarantine(kind, "malformed_json")
    if previous is not None:
        prev_day, prev_n = previous
        for i in range(max(1, round(0.01 * n))):
            old = event(kind, prev_day, prev_n - 1 - i)  # a clean event of the previous day's file
            old["upload_time"] = ts(datetime.fromisoformat(old["upload_time"].replace("Z", "+00:00")) + timedelta(days=1))
            lines.append(json.dumps(old))
            exp.read[kind] += 1
            exp.duplicate[kind] += 1
    return lines, exp


def write_jsonl_gz(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt") as fh:
        fh.write("\n".join(lines) + "\n")
    return path


def write_parquet(path: Path, kind: str, rows: list[dict], overrides: dict[str, pa.DataType] | None = None,
                  extra: dict[str, list] | None = None) -> Path:
    """Rows as Parquet in the telemetry schema; ``overrides`` changes a column's type, ``extra`` adds columns."""
    path.parent.mkdir(parents=True, exist_ok=True)
    schema = telemetry.arrow_schema(kind)
    cols = {}
    for f in schema:
        values = [r.get(f.name) for r in rows]
        if pa.types.is_timestamp(f.type):
            values = [datetime.fromisoformat(v.replace("Z", "+00:00")) if v else None for v in values]
        if pa.types.is_map(f.type):
            values = [list(v.items()) if v is not None else None for v in values]
        target = (overrides or {}).get(f.name, f.type)
        if target != f.type:
            values = [str(v) if v is not None else None for v in values]
        cols[f.name] = pa.array(values, type=target)
    for name, values in (extra or {}).items():
        cols[name] = pa.array(values)
    pq.write_table(pa.table(cols), path)
    return path
