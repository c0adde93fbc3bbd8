"""Golden check: the dbt models give the same answers as the committed golden file.

``tests/models/golden/`` holds ``experiment_sufficient_stats`` of the ``full_lake`` fixture (the
seeded tests/models/scenario_models.yaml fleet: 3 pre-period days, then 4 days of fhol_2026_06,
one ``dbt build --full-refresh``), written by the models as they were before a speed change, and
a fingerprint of the bronze input it came from. A change to the models must give the same
statistics (doubles within a relative 1e-9) and, through the stats engine, the same
``experiment_results``: estimates and CI ends within a relative 1e-9, the same verdicts. So speed
is never bought with a different answer.

When the *input* changes (the simulator or the scenario), the fingerprint no longer matches and
the test says so: regenerate the file from the models of main (not from a change under test) with
``QUICEXP_WRITE_GOLDEN=1 .venvs/pipeline/bin/python -m pytest tests/models/test_golden.py``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.pipeline_lake import _canonical, assert_same_tables

GOLDEN = Path(__file__).parent / "golden"
STATS_FILE = GOLDEN / "experiment_sufficient_stats.parquet"
INPUT_FILE = GOLDEN / "input_fingerprint.json"
BRONZE_TABLES = ("http_transactions", "search_queries", "video_playbacks", "connections",
                 "page_loads", "multipath_paths", "header_compression", "experiment_arms")  # fmt: skip
NUMERIC_TYPES = ("integer", "long", "double", "float", "short", "byte")
RESULT_FLOATS = ["value_control", "value_treatment", "delta_abs", "se_abs", "ci_abs_lower", "ci_abs_upper",
                 "delta_rel", "se_rel", "ci_rel_lower", "ci_rel_upper", "p_value", "p_value_adjusted",
                 "seq_ci_abs_lower", "seq_ci_abs_upper", "seq_ci_rel_lower", "seq_ci_rel_upper"]  # fmt: skip
RESULT_VERDICTS = ["n_control", "n_treatment", "is_significant", "is_seq_significant", "is_trustworthy",
                   "method", "relative_method"]  # fmt: skip
RESULT_KEYS = ["experiment_id", "metric", "segment_type", "segment_value", "as_of_date", "quantile_p",
               "treatment_arm"]  # fmt: skip


def input_fingerprint(spark, settings) -> dict[str, dict]:
    """Per bronze table: its row count and the sum of each numeric column (every column of the
    input that feeds a metric), so a change of the simulator or the scenario is seen."""
    out = {}
    for table in BRONZE_TABLES:
        frame = spark.table(f"{settings.bronze_schema}.{table}")
        numeric = sorted(f.name for f in frame.schema.fields if f.dataType.typeName() in NUMERIC_TYPES)
        row = frame.selectExpr("count(*) as rows", *(f"sum(cast(`{c}` as double)) as `{c}`" for c in numeric)).first()
        out[table] = {"rows": int(row["rows"]), "sums": {c: row[c] for c in numeric}}
    return out


def assert_same_input(got: dict, want: dict) -> None:
    message = ("the bronze input of full_lake changed (simulator or scenario): regenerate the golden "
               "file from main's models (see this module's docstring)")  # fmt: skip
    assert sorted(got) == sorted(want), message
    for table, fp in want.items():
        assert got[table]["rows"] == fp["rows"], f"{message}: {table} rows"
        assert sorted(got[table]["sums"]) == sorted(fp["sums"]), f"{message}: {table} columns"
        for column, value in fp["sums"].items():
            other = got[table]["sums"][column]
            assert (value is None) == (other is None), f"{message}: {table}.{column}"
            if value is not None:
                assert abs(other - value) <= 1e-9 * max(abs(value), 1.0), f"{message}: {table}.{column}"


def _results(stats: pd.DataFrame, settings) -> pd.DataFrame:
    import jobs.experiment_results
    from quicexp.registry import load_registry

    registry = load_registry(settings.registry_file)
    res = jobs.experiment_results.compute(stats, registry)
    return res.sort_values(RESULT_KEYS, na_position="first").reset_index(drop=True)


def normalized(frame: pd.DataFrame) -> pd.DataFrame:
    """Columns sorted, arrays as lists, dates as dates, rows in canonical order; the same for a
    frame from Spark and one read back from the golden Parquet file."""
    frame = frame[sorted(frame.columns)].copy()
    for column in frame.columns:
        if frame[column].map(lambda v: isinstance(v, (list, tuple, np.ndarray))).any():
            frame[column] = frame[column].map(lambda v: None if v is None else [float(x) for x in v])
    frame["as_of_date"] = pd.to_datetime(frame["as_of_date"]).dt.date
    return _canonical(frame)


def test_sufficient_stats_and_results_match_the_golden_file(spark, full_lake):
    got = normalized(spark.table(f"{full_lake.gold_schema}.experiment_sufficient_stats").toPandas())
    fingerprint = input_fingerprint(spark, full_lake)
    if os.environ.get("QUICEXP_WRITE_GOLDEN") == "1":
        write_golden(got, fingerprint)
        pytest.skip(f"golden file written ({len(got)} rows): commit tests/models/golden/")
    assert_same_input(fingerprint, json.loads(INPUT_FILE.read_text()))
    want = normalized(pd.read_parquet(STATS_FILE))
    assert len(want) > 1000
    assert_same_tables({"experiment_sufficient_stats": got}, {"experiment_sufficient_stats": want})

    res_got, res_want = _results(got, full_lake), _results(want, full_lake)
    assert len(res_want) > 100
    assert len(res_got) == len(res_want)
    keys = RESULT_KEYS + RESULT_VERDICTS
    pd.testing.assert_frame_equal(res_got[keys], res_want[keys])
    for column in RESULT_FLOATS:
        np.testing.assert_allclose(res_got[column].astype(float), res_want[column].astype(float),
                                   rtol=1e-9, atol=1e-12, equal_nan=True, err_msg=column)  # fmt: skip


def write_golden(stats: pd.DataFrame, fingerprint: dict) -> None:
    GOLDEN.mkdir(exist_ok=True)
    stats.to_parquet(STATS_FILE, index=False, compression="zstd")
    INPUT_FILE.write_text(json.dumps(fingerprint, indent=1, sort_keys=True) + "\n")
