"""The qlog landing listing and the sidecar's accounting, without Spark."""

from __future__ import annotations

import gzip
import json
from datetime import date

import pytest

from jobs.ingest.landing import LandingError
from jobs.qlog.job import list_landing, read_sidecars
from jobs.qlog.parse import parse_path
from quicexp.config import load_settings

D = date(2026, 6, 15)


def test_every_file_at_any_depth_is_listed(tmp_path):
    settings = load_settings(home=tmp_path)
    with pytest.raises(LandingError, match="does not exist"):
        list_landing(settings, D)
    day = settings.landing_root / f"upload_date={D}"
    day.mkdir(parents=True)
    assert list_landing(settings, D).files == 0  # a day without qlog
    q = day / "qlog"
    for name in ("client/a.qlog", "server/a.qlog.gz", "server/x/y/b.sqlog", "c[1]*?.qlog", ".hidden.qlog",
                 "client/_connections.jsonl.gz", "_connections.jsonl", "notes.txt", "client/empty.qlog"):
        (q / name).parent.mkdir(parents=True, exist_ok=True)
        (q / name).write_bytes(b"" if "empty" in name else b"x")
    landing = list_landing(settings, D)
    traces = {str(p.relative_to(q)): hint for p, hint in landing.traces}
    assert traces == {"client/a.qlog": "client", "server/a.qlog.gz": "server", "server/x/y/b.sqlog": "server",
                      "c[1]*?.qlog": None, ".hidden.qlog": None, "client/empty.qlog": "client"}
    assert sorted(str(p.relative_to(q)) for p in landing.sidecars) == ["_connections.jsonl",
                                                                       "client/_connections.jsonl.gz"]
    assert [p.name for p in landing.unrecognised] == ["notes.txt"]
    (row,) = parse_path(str(q / "client/empty.qlog"))
    assert row["reason"] == "empty_file"
    (row,) = parse_path(str(q / "gone.qlog"))
    assert row["reason"] == "unreadable_file"


def test_sidecar_lines_are_loaded_quarantined_or_duplicate(tmp_path):
    good = {"odcid": "AB01", "client_id": "c1", "experiments": {"e": "t"}, "opened_at": "2026-06-15T10:00:00Z",
            "condition": "rtt20"}
    lines = [json.dumps(good), "", "[1, 2", json.dumps({"client_id": "c"}), json.dumps(good),
             json.dumps({"odcid": "cd02", "client_id": "c2"}), json.dumps({"odcid": "CD02", "client_id": "c3"})]
    first = tmp_path / "_connections.jsonl"
    first.write_text("\n".join(lines) + "\n")
    second = tmp_path / "deep" / "_connections.jsonl.gz"
    second.parent.mkdir()
    second.write_bytes(gzip.compress(json.dumps({"odcid": "ef03", "client_id": "c4", "opened_at": 1.75e12}).encode()))
    empty = tmp_path / "e" / "_connections.jsonl"
    empty.parent.mkdir()
    empty.write_text("")
    result = read_sidecars([first, second, empty], D)
    assert [(m["odcid"], m["client_id"], m["network_condition"]) for m in result.mappings] == [
        ("ab01", "c1", "rtt20"), ("ef03", "c4", None)]
    assert result.mappings[0]["opened_at"].isoformat() == "2026-06-15T10:00:00+00:00"
    assert result.mappings[1]["opened_at"].year == 2025
    audit = {a["source_file"].rsplit("/", 2)[-2:][0]: a for a in result.audit}
    counts = {k: (a["rows_read"], a["rows_loaded"], a["rows_quarantined"], a["rows_duplicate"]) for k, a in audit.items()}
    assert counts == {tmp_path.name: (6, 1, 4, 1), "deep": (1, 1, 0, 0), "e": (0, 0, 0, 0)}
    assert sorted(q["reason"] for q in result.quarantine) == [
        "ambiguous_odcid", "ambiguous_odcid", "invalid_sidecar_line", "malformed_sidecar_line"]
    assert {q["raw_text"] for q in result.quarantine if q["reason"] == "malformed_sidecar_line"} == {"[1, 2"}
