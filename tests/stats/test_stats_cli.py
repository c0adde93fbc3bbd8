"""``quicexp stats`` through the real console entry point: files in and out, one-line errors with
the exit code of their kind, bad rows on stderr."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from _stats_tables import mean_rows, quantile_rows, table

from quicexp.errors import ConfigError, InputDataError
from stats.schema import OUTPUT_COLUMNS
from tests.helpers import quicexp


def stats(*args: str):
    return quicexp("stats", *args, timeout=120)


def _csv(df: pd.DataFrame, path) -> None:
    out = df.copy()
    for c in ("grid_p", "grid_value"):
        if c not in out:
            continue
        out[c] = out[c].map(
            lambda v: json.dumps([float(x) for x in v]) if isinstance(v, list) else None
        )
    out.to_csv(path, index=False)


def test_csv_in_parquet_out_with_bad_rows_on_stderr(rng, tmp_path):
    rows = mean_rows(rng, metric="a") + mean_rows(rng, metric="b") + quantile_rows(rng)
    rows[2]["n_units"] = 1
    rows[3]["metric_kind"] = "histogram"
    src, dst = tmp_path / "in.csv", tmp_path / "out" / "res.parquet"
    _csv(table(rows), src)
    res = stats(str(src), str(dst))
    assert res.returncode == 0, res.stderr
    err = [line for line in res.stderr.splitlines() if line]
    assert len(err) == 2
    assert "n_units < 2" in err[0] and "unknown metric kind 'histogram'" in err[1]
    out = pd.read_parquet(dst)
    assert list(out.columns) == OUTPUT_COLUMNS
    assert sorted(out["metric"]) == ["a", "latency_p95"]


def test_parquet_in_csv_out_and_config_file(rng, tmp_path):
    src, dst, cfg = tmp_path / "in.parquet", tmp_path / "res.csv", tmp_path / "cfg.json"
    table(mean_rows(rng) + quantile_rows(rng)).to_parquet(src)
    cfg.write_text(json.dumps({"alpha": 0.1, "correction": "holm", "sequential_tuning_n": 5000}))
    res = stats(str(src), str(dst), "--config", str(cfg), "--relative-ci", "fieller")
    assert res.returncode == 0, res.stderr
    out = pd.read_csv(dst)
    assert (out["alpha"] == 0.1).all() and (out["correction_method"] == "holm").all()
    assert (out["relative_method"] == "fieller").all()


@pytest.mark.parametrize(
    ("args", "needle", "code"),
    [
        (["missing.csv", "out.csv"], "input file not found", InputDataError.exit_code),
        (["IN", "out.txt"], "unsupported output type", InputDataError.exit_code),
        (["IN", "out.csv", "--alpha", "abc"], "invalid setting alpha", ConfigError.exit_code),
        (["IN", "out.csv", "--alpha", "1.5"], "invalid setting alpha", ConfigError.exit_code),
        (["IN", "out.csv", "--correction", "magic"], "invalid setting correction", ConfigError.exit_code),
        (["IN", "out.csv", "--config", "nope.json"], "config file not found", ConfigError.exit_code),
        (["IN"], "missing argument OUTPUT", ConfigError.exit_code),
        ([], "missing argument INPUT", ConfigError.exit_code),
    ],
)
def test_errors_are_one_line_and_nonzero(rng, tmp_path, args, needle, code):
    src = tmp_path / "in.csv"
    _csv(table(mean_rows(rng)), src)
    args = [
        str(src) if a == "IN" else (str(tmp_path / a) if a.startswith(("out", "nope")) else a)
        for a in args
    ]
    res = stats(*args)
    assert res.returncode == code, res.stderr
    lines = [line for line in res.stderr.splitlines() if line]
    assert len(lines) == 1 and lines[0].startswith("quicexp: error:") and needle in lines[0]
    assert res.stdout == ""


def test_missing_column_and_bad_config_are_one_line(rng, tmp_path):
    src, cfg = tmp_path / "in.csv", tmp_path / "c.toml"
    _csv(table(mean_rows(rng)).drop(columns="arm"), src)
    res = stats(str(src), str(tmp_path / "o.csv"))
    assert res.returncode == InputDataError.exit_code and res.stderr.count("\n") == 1 and "arm" in res.stderr
    _csv(table(mean_rows(rng)), src)
    cfg.write_text("alpha = [")
    res = stats(str(src), str(tmp_path / "o.csv"), "--config", str(cfg))
    assert res.returncode == ConfigError.exit_code and res.stderr.count("\n") == 1
    assert "cannot read config" in res.stderr


def test_garbage_input_file_is_one_line(tmp_path):
    src = tmp_path / "in.parquet"
    src.write_bytes(b"not parquet")
    res = stats(str(src), str(tmp_path / "o.csv"))
    assert res.returncode == InputDataError.exit_code and res.stderr.count("\n") == 1
    assert "cannot read" in res.stderr
