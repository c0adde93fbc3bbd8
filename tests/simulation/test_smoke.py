"""Smoke test of the landing-zone layout for the fhol scenario (small run)."""

import gzip
import json

from simulation.runner import run_scenario


def test_fhol_landing_zone(tmp_path):
    m = run_scenario("fhol", tmp_path, days=1, clients=2000, workers=1)
    assert (tmp_path / "_manifest.json").exists()
    files = sorted(tmp_path.glob("upload_date=*/*/*.jsonl.gz"))
    kinds = {f.parent.name for f in files}
    assert {"http_transactions", "video_playbacks", "connections"} <= kinds
    with gzip.open(next(f for f in files if f.parent.name == "http_transactions"), "rt") as fh:
        row = json.loads(fh.readline())
    assert row["schema_version"] == 1 and row["event_time"].endswith("Z")
    assert m["events_total"] > 0
