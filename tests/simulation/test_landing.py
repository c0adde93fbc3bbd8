"""Landing zone, schema, faults, determinism and the CLI, on small runs."""

import gzip
import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from quicexp import telemetry
from simulation.runner import run_scenario
from simulation.scenario import ScenarioError, load_scenario
from tests.helpers import quicexp

JSON_TYPES = {"string": str, "long": int, "double": (int, float), "boolean": bool, "timestamp": str, "map<string,string>": dict}


def read_jsonl(root: Path, kind: str):
    good, bad = [], 0
    for f in sorted(root.glob(f"upload_date=*/{kind}/*.jsonl.gz")):
        with gzip.open(f, "rb") as fh:
            for line in fh:
                try:
                    good.append((f.parts[-3], json.loads(line)))
                except (json.JSONDecodeError, UnicodeDecodeError):
                    bad += 1
    return good, bad


@pytest.fixture(scope="module")
def aa_jsonl(tmp_path_factory):
    out = tmp_path_factory.mktemp("aa")
    manifest = run_scenario("aa", out, days=2, clients=3000, workers=2, seed=5)
    return out, manifest


def conforms(kind: str, row: dict) -> bool:
    for f in telemetry.fields(kind):
        v = row.get(f.name)
        if v is None:
            if not f.nullable:
                return False
            continue
        if not isinstance(v, JSON_TYPES[f.type]) or (f.type in ("long", "double") and isinstance(v, bool)):
            return False
    return True


def test_layout_and_manifest(aa_jsonl):
    out, m = aa_jsonl
    assert json.loads((out / "_manifest.json").read_text())["scenario"] == "aa"
    kinds = {p.parent.name for p in out.glob("upload_date=*/*/*.jsonl.gz")}
    assert kinds == set(m["rows_by_upload_date"]) and {"http_transactions", "video_playbacks", "connections"} <= kinds
    for kind, per_day in m["rows_by_upload_date"].items():
        for day, count in per_day.items():
            lines = sum(1 for f in out.glob(f"upload_date={day}/{kind}/*.jsonl.gz") for _ in gzip.open(f, "rb"))
            assert lines == count


def test_rows_follow_schema_and_fault_counts(aa_jsonl):
    out, m = aa_jsonl
    for kind, per_day in m["events_by_event_date"].items():
        rows, malformed = read_jsonl(out, kind)
        bad = m["bad_input_by_kind"][kind]
        n = sum(per_day.values())
        assert malformed == bad["malformed_lines"] and abs(malformed - 0.001 * n) <= 1
        assert len(rows) == n + bad["duplicates"]
        violations = sum(not conforms(kind, r) for _, r in rows)
        assert violations == bad["schema_violations"]
        ids = [r["event_id"] for _, r in rows]
        assert len(ids) - len(set(ids)) == bad["duplicates"]
        assert abs(bad["duplicates"] - 0.005 * n) <= 2 and abs(bad["late_uploads"] - 0.01 * n) <= 2
        assert all(r["event_type"] == telemetry.event_type(kind) and r["schema_version"] == 1 for _, r in rows)
        late = sum(1 for day, r in rows if isinstance(r["event_time"], str) and day[len("upload_date="):] >= _date(r["event_time"], 1))
        assert late >= bad["late_uploads"] * 0.9
        assert abs(bad["clock_skewed"] - 0.002 * n) <= 1 and abs(bad["schema_violations"] - 0.001 * n) <= 1


def _date(ts: str, plus_days: int) -> str:
    import datetime as dt

    return (dt.date.fromisoformat(ts[:10]) + dt.timedelta(days=plus_days)).isoformat()


def test_times_are_rfc3339_ms(aa_jsonl):
    out, _ = aa_jsonl
    rows, _ = read_jsonl(out, "video_playbacks")
    r = next(r for _, r in rows if isinstance(r["event_time"], str))
    assert len(r["event_time"]) == 24 and r["event_time"][10] == "T" and r["event_time"].endswith("Z")


def test_parquet_matches_arrow_schema(tmp_path):
    m = run_scenario("fhol", tmp_path, days=1, clients=2000, fmt="parquet", workers=1)
    files = list(tmp_path.glob("upload_date=*/http_transactions/*.parquet"))
    assert files and m["format"] == "parquet"
    expected = telemetry.arrow_schema("http_transactions")
    for f in files:
        got = pq.read_schema(f)
        assert got.names == expected.names
        assert [t.type for t in got] == [t.type for t in expected]


def test_deterministic_and_independent_of_workers(tmp_path):
    a = run_scenario("fhol", tmp_path / "a", days=1, clients=2000, workers=1, seed=9)
    b = run_scenario("fhol", tmp_path / "b", days=1, clients=2000, workers=2, seed=9)
    c = run_scenario("fhol", tmp_path / "c", days=1, clients=2000, workers=1, seed=10)
    assert a["rows_by_upload_date"] == b["rows_by_upload_date"]
    for f in sorted((tmp_path / "a").rglob("*.jsonl.gz")):
        twin = tmp_path / "b" / f.relative_to(tmp_path / "a")
        assert gzip.open(f).read() == gzip.open(twin).read()
    assert a["events_total"] != c["events_total"]


def test_scenarios_load_and_bad_yaml_is_one_line(tmp_path):
    for name in ("fhol", "h3_prioritization", "header_compression", "cc_loss_recovery", "multipath", "aa"):
        assert load_scenario(name).name == name
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nexperiments:\n  - id: e\n    arms: [{name: a, weight: -1}, {name: b}]\n")
    with pytest.raises(ScenarioError) as err:
        load_scenario(bad)
    assert "\n" not in str(err.value) and "weight" in str(err.value)
    bad.write_text("name: [unclosed\n")
    with pytest.raises(ScenarioError) as err:
        load_scenario(bad)
    assert "invalid YAML" in str(err.value)


def test_cli_runs_and_rejects_bad_args(tmp_path):
    """Through the real console entry point: bad arguments are one line and exit 2."""
    ok = quicexp("simulate", "fhol", "--days", "1", "--clients", "500", "--out", str(tmp_path), "--seed", "3", "--workers", "1")
    assert ok.returncode == 0, ok.stderr
    assert (tmp_path / "_manifest.json").exists()
    for args in (["nope"], ["fhol", "--format", "csv"], ["fhol", "--start-date", "June"], ["fhol", "--days", "-1"]):
        res = quicexp("simulate", *args, "--out", str(tmp_path / "x"))
        assert res.returncode == 2, (args, res.stderr)
        assert "Traceback" not in res.stderr and res.stderr.strip().count("\n") == 0
        assert res.stderr.startswith("quicexp: error:")


def test_start_date_override(tmp_path):
    m = run_scenario("fhol", tmp_path, days=1, clients=500, workers=1, start_date="2026-01-03")
    assert list(m["events_by_event_date"]["http_transactions"]) == ["2026-01-03"]
    assert min(m["rows_by_upload_date"]["http_transactions"]) == "2026-01-03"
    assert isinstance(np.int64(1), np.integer)
