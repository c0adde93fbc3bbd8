"""The telemetry schema package: vocabulary, Arrow schema, and the docs listing every field."""

from pathlib import Path

import pyarrow as pa
import pytest

from quicexp import telemetry

DOC = Path(__file__).resolve().parents[2] / "docs" / "telemetry.md"
REQUIRED = {
    "http_transactions": {"latency_ms", "response_bytes", "hol_blocked_ms", "connection_id"},
    "video_playbacks": {"time_to_first_frame_ms", "watch_time_ms", "rebuffer_count", "rebuffer_time_ms", "mean_bandwidth_kbps"},
    "connections": {"srtt_ms", "min_rtt_ms", "packets_sent", "packets_lost", "packets_retransmitted", "is_zero_rtt", "congestion_control", "close_delay_ms"},
}
COMMON = ["event_id", "event_type", "schema_version", "client_id", "event_time", "upload_time", "platform", "network_type", "app", "app_version", "experiments"]


def test_kinds_and_required_fields():
    assert set(telemetry.EVENT_KINDS) == {
        "http_transactions", "search_queries", "page_loads", "video_playbacks", "connections", "multipath_paths", "header_compression"
    }
    for kind, names in REQUIRED.items():
        assert names <= {f.name for f in telemetry.fields(kind)}


@pytest.mark.parametrize("kind", telemetry.EVENT_KINDS)
def test_fields_types_and_arrow(kind):
    fs = telemetry.fields(kind)
    names = [f.name for f in fs]
    assert len(names) == len(set(names))
    assert all(c in names for c in COMMON)
    assert all(f.type in telemetry.TYPES and f.description for f in fs)
    schema = telemetry.arrow_schema(kind)
    assert schema.names == names
    assert schema.field("event_time").type == pa.timestamp("ms", tz="UTC")
    assert schema.field("experiments").type == pa.map_(pa.string(), pa.string())
    assert [schema.field(f.name).nullable for f in fs] == [f.nullable for f in fs]
    for f in fs:
        if f.name.endswith("_ms") or f.name.endswith("_kbps"):
            assert f.type == "double", f.name
        if f.name.endswith("_bytes") or f.name.startswith("packets_"):
            assert f.type == "long", f.name


def test_unknown_kind_is_a_clear_error():
    with pytest.raises(KeyError, match="unknown event kind"):
        telemetry.fields("nope")


def test_docs_list_every_field():
    text = DOC.read_text()
    for kind in telemetry.EVENT_KINDS:
        section = text.split(f"## `{kind}`")[1].split("\n## ")[0]
        for f in telemetry.fields(kind)[len(telemetry.common_fields()):]:
            assert f"`{f.name}`" in section, (kind, f.name)
