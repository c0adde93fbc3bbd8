"""The daily run's dbt selection, resolved by dbt itself (``dbt ls``, no Spark): every model and
data test of the project, and none of its unit tests (they check SQL logic on fixed rows; CI runs
them, tests/models)."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import date

from quicexp.app.daily import CHECK_MODELS, STEPS, dbt_selection
from quicexp.config import REPO_ROOT
from quicexp.metrics import registry_document

DBT = REPO_ROOT / ".venvs" / "pipeline" / "bin" / "dbt"


def _ls(tmp_path, *selection: str) -> set[tuple[str, str]]:
    env = {**os.environ, "QUICEXP_DBT_TARGET": "local", "DBT_SEND_ANONYMOUS_USAGE_STATS": "false"}
    done = subprocess.run(
        [str(DBT), "ls", "--project-dir", str(REPO_ROOT), "--profiles-dir", str(REPO_ROOT),
         "--target-path", str(tmp_path / "target"), "--log-path", str(tmp_path), "-q",
         "--output", "json", "--output-keys", "resource_type", "name",
         "--vars", json.dumps({"metric_registry": registry_document()}), *selection],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return {(node["resource_type"], node["name"]) for node in map(json.loads, done.stdout.splitlines())}


def test_the_daily_build_runs_every_model_and_data_test_and_no_unit_test(tmp_path):
    step = next(s for s in STEPS if s.name == "dbt_build")
    argv = step.command(date(2026, 6, 15), [])
    assert argv[:2] == ["dbt", "build"]
    selection = argv[2 : argv.index("--date")]

    daily = _ls(tmp_path, *selection)
    everything = _ls(tmp_path, "--resource-type", "all")

    kinds = {kind for kind, _ in everything}
    assert {"model", "test", "unit_test"} <= kinds, kinds  # the project has all three
    wanted = {node for node in everything if node[0] in ("model", "test")}
    assert daily == wanted, sorted(daily ^ wanted)


def test_a_day_without_the_checks_leaves_out_their_models_and_data_tests_only(tmp_path):
    """What bench/bench_checks.py measures the checks against: the daily selection less the two
    health marts and their data tests, nothing else."""
    daily = _ls(tmp_path, *dbt_selection())
    without = _ls(tmp_path, *dbt_selection(checks=False))
    left_out = daily - without
    marts = {name.rstrip("+") for name in CHECK_MODELS}
    assert without < daily and marts <= {name for _, name in left_out}
    assert {kind for kind, _ in left_out} == {"model", "test"}
    tests_of_other_nodes = {name for kind, name in left_out if kind == "test" and not any(m in name for m in marts)}
    assert {name for kind, name in left_out if kind == "model"} == marts and not tests_of_other_nodes, left_out
