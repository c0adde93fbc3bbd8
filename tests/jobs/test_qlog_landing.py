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


def test_the_sidecar_window_maps_across_upload_days(tmp_path):
    """Sidecar lines of the other upload days within lookback_days (either way) map the day's
    traces: the day's own line first, then the nearest day's (the earlier on a tie); lines of the
    window that map one ODCID to two clients make it ambiguous; farther days are not read."""
    from datetime import timedelta

    from jobs.qlog.job import window_mappings, window_sidecars

    settings = load_settings(home=tmp_path)
    lookback = settings.ingest.lookback_days

    def sidecar(day, *lines, name="_connections.jsonl"):
        path = settings.landing_root / f"upload_date={day}" / "qlog" / "x" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
        return path

    def line(odcid, client, **more):
        return {"odcid": odcid, "client_id": client, "experiments": {"e": "a"}, **more}

    own = sidecar(D, line("aa", "c1", condition="own"), line("zz", "c9"), line("zz", "c8"))
    sidecar(D - timedelta(days=1), line("aa", "c1", condition="before"), line("bb", "c2", condition="before"),
            line("cc", "c3", condition="before", invalid="host_drops", condition_values={"rtt": "30ms", "x": [1]}))
    sidecar(D + timedelta(days=1), line("bb", "c2", condition="after"), line("dd", "c4"), line("ee", "c5"), "{bad")
    sidecar(D + timedelta(days=2), line("cc", "c3", condition="later"), line("ee", "c6"))
    sidecar(D - timedelta(days=lookback + 1), line("ff", "c7"))  # outside the window
    others = window_sidecars(settings, D)
    assert sorted(day for day, _ in others) == [D - timedelta(days=1), D + timedelta(days=1), D + timedelta(days=2)]
    result = read_sidecars([own], D)
    got = {m["odcid"]: m for m in window_mappings(result, others, D)}
    assert set(got) == {"aa", "bb", "cc", "dd", "ee", "zz"}
    assert (got["aa"]["network_condition"], got["aa"]["sidecar_upload_date"]) == ("own", D)  # its own day's line
    assert (got["bb"]["network_condition"], got["bb"]["sidecar_upload_date"]) == ("before", D - timedelta(days=1))
    assert got["cc"]["network_condition"] == "before"  # one day back beats two days forward
    assert (got["cc"]["invalid_reason"], got["cc"]["condition_values"]) == ("host_drops", {"rtt": "30ms"})
    assert got["dd"]["client_id"] == "c4" and got["dd"]["sidecar_upload_date"] == D + timedelta(days=1)
    for odcid in ("ee", "zz"):  # two clients across the window (ee) or within the day (zz)
        assert got[odcid]["ambiguous"] and got[odcid]["client_id"] is None
    assert not any(got[o]["ambiguous"] for o in ("aa", "bb", "cc", "dd"))
