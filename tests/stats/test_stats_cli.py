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


def test_decisions_beside_the_results_from_the_registry_setting(rng, tmp_path):
    """--decisions: the verdicts of the registry's experiments, recomputed from sufficient
    statistics without Spark (as the daily results step computes them)."""
    import os

    from tests.helpers import quicexp as run

    registry = tmp_path / "experiments.yml"
    registry.write_text(
        "experiments:\n"
        "  - id: e1\n    title: t\n    start_date: '2026-01-01'\n"
        "    planned_units_per_arm: 5000\n    planned_days: 10\n"
        "    metrics: {success: [{metric: request_latency_per_client, minimum_effect: 0.05}],"
        " guardrails: [{metric: mtbr, margin: 0.5}]}\n"
        "    arms: [{name: A, share: 0.5, is_control: true}, {name: B, share: 0.5}]\n"
    )
    rows = [r for d in ("2026-01-01", "2026-01-02") for m, shift in
            (("request_latency_per_client", -0.6), ("mtbr", 0.0))
            for r in mean_rows(rng, metric=m, n=2000, day=d, shift=shift)]  # fmt: skip
    src, dst = tmp_path / "in.parquet", tmp_path / "res.parquet"
    table(rows).to_parquet(src)
    env = {**os.environ, "QUICEXP_REGISTRY_FILE": str(registry), "QUICEXP_HOME": str(tmp_path)}
    res = run("stats", str(src), str(dst), "--decisions", str(tmp_path / "v.csv"), env=env,
              timeout=120)  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "wrote 2 verdicts" in res.stdout
    v = pd.read_csv(tmp_path / "v.csv")
    assert v["verdict"].tolist() == ["ship", "ship"]
    assert v["reasons"].iloc[-1] == "success_better:request_latency_per_client;guardrail_noninferior:mtbr"
    results = pd.read_parquet(dst)
    assert results["sequential_calibrated"].all()  # the registry's plan sized the analysis
    # a registry that declares nothing: one line, usage
    registry.write_text(registry.read_text().replace(
        "    metrics: {success: [{metric: request_latency_per_client, minimum_effect: 0.05}],"
        " guardrails: [{metric: mtbr, margin: 0.5}]}\n", ""))  # fmt: skip
    res = run("stats", str(src), str(dst), "--decisions", str(tmp_path / "v.csv"), env=env)
    assert res.returncode == 2 and "declares its metrics" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
