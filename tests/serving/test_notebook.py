"""``make notebook``: notebooks/explore_experiment.ipynb executed headless (nbclient's
jupyter-execute) in its own kernel process (its own Spark JVM on the shared metastore), against
the shared pipeline lake, into the lake's home: the decision first
(the verdict as gold.experiment_decisions has it, the health, the cards as an inline figure),
then the forest plot (a metric whose control is 0 on its own absolute axis) and the per-unit
data, every figure an image/png output of its cell."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys

import nbformat
import numpy as np
import pytest

from quicexp.config import REPO_ROOT
from tests.pipeline_lake import FHOL as EXPERIMENT

NOTEBOOK = REPO_ROOT / "notebooks" / "explore_experiment.ipynb"
KERNEL = "quicexp-pipeline"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def executed(tmp_path_factory, pipeline_lake):
    """``make notebook`` on the shared pipeline lake (it only reads it, so neither the Thrift
    server nor Superset of the ``serving`` fixture is needed): the executed copy, the figures'
    folder and what make printed. The kernelspec is installed for this interpreter in a private
    Jupyter path (``make notebook-kernel`` would install it for the user)."""
    prefix = tmp_path_factory.mktemp("jupyter")
    subprocess.run(
        [sys.executable, "-m", "ipykernel", "install", "--prefix", str(prefix), "--name", KERNEL,
         "--display-name", "quicexp (pipeline env)"],
        check=True, capture_output=True,
    )  # fmt: skip
    settings = pipeline_lake.settings
    env = {
        **os.environ,
        "JUPYTER_PATH": str(prefix / "share" / "jupyter"),
        "QUICEXP_HOME": str(settings.home),
        "QUICEXP_LAKE_ROOT": str(settings.lake_root),
        "QUICEXP_METASTORE_DIR": str(settings.metastore_dir),
        "QUICEXP_REGISTRY_FILE": str(settings.registry_file),
        "QUICEXP_BRONZE_SCHEMA": settings.bronze_schema,
        "QUICEXP_SILVER_SCHEMA": settings.silver_schema,
        "QUICEXP_GOLD_SCHEMA": settings.gold_schema,
        "QUICEXP_SPARK__DRIVER_MEMORY": "1500m",
        "QUICEXP_NOTEBOOK_EXPERIMENT": EXPERIMENT,
    }
    env.pop("QUICEXP_NOTEBOOK_FIGURES", None)
    done = subprocess.run(
        ["make", "-C", str(REPO_ROOT), "-o", "setup", "-o", "notebook-kernel", "notebook"],
        env=env, capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = settings.home / "notebooks"
    return out / "explore_experiment.ipynb", out / "figures", done.stdout


def _cell(nb, tag: str):
    (cell,) = [c for c in nb.cells if tag in c.metadata.get("tags", [])]
    return cell


def _text(cell) -> str:
    """What the cell printed (streams) and showed as text (a table's text/plain and HTML)."""
    parts = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            parts.append(out.get("text", ""))
        for kind in ("text/plain", "text/html"):
            parts.append(out.get("data", {}).get(kind, ""))
    return "\n".join(parts)


def _pngs(cell) -> list[bytes]:
    return [base64.b64decode(out["data"]["image/png"]) for out in cell.get("outputs", [])
            if "image/png" in out.get("data", {})]  # fmt: skip


def test_make_notebook_starts_from_the_decision_and_draws_inline(executed, pipeline_lake, spark):
    from pyspark.sql import functions as F

    path, figures, printed = executed
    assert f"executed notebook: {path}" in printed and f"figures (PNG): {figures}/" in printed
    nb = nbformat.read(path, as_version=4)
    assert nb.metadata["kernelspec"]["name"] == KERNEL
    assert all(c.get("execution_count") for c in nb.cells if c.cell_type == "code")
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    # the committed notebook stays without outputs
    assert not any(
        c.get("outputs")
        for c in nbformat.read(NOTEBOOK, as_version=4).cells
        if c.cell_type == "code"
    )

    # the lake's own verdict at the latest look, for each treatment arm
    gold = pipeline_lake.settings.gold_schema
    this = F.col("experiment_id") == EXPERIMENT
    decisions = spark.table(f"{gold}.experiment_decisions").where(this)
    as_of = decisions.agg(F.max("as_of_date")).first()[0]
    verdicts = decisions.where(F.col("as_of_date") == F.lit(as_of)).collect()
    assert verdicts
    text = _text(_cell(nb, "verdict"))
    assert f"{EXPERIMENT} as of {as_of}" in text
    for row in verdicts:
        assert f"{row['treatment_arm']} vs {row['control_arm']}: {row['verdict']} (" in text, text
    assert "health: " in _text(_cell(nb, "health"))

    # one card per declared metric and arm, drawn inline (and saved) as a PNG
    tested = (spark.table(f"{gold}.experiment_decision_tests").where(this & (F.col("as_of_date") == F.lit(as_of)))
              .select("metric", "quantile_p", "treatment_arm").distinct().collect())  # fmt: skip
    cards = _cell(nb, "cards")
    for row in tested:
        key = (
            row["metric"]
            if row["quantile_p"] is None
            else f"{row['metric']}@p{row['quantile_p'] * 100:g}"
        )
        assert key in _text(cards), key
    for tag in ("cards", "forest", "units-plot"):
        pngs = _pngs(_cell(nb, tag))
        assert len(pngs) == 1 and pngs[0].startswith(PNG_MAGIC) and len(pngs[0]) > 10_000, tag

    # every metric whose relative delta is undefined (a control of 0: NaN, ±inf or null in the
    # results) but has an absolute one is drawn on its own absolute axis
    overall = (spark.table(f"{gold}.experiment_results")
               .where(this & (F.col("as_of_date") == F.lit(as_of)) & (F.col("segment_type") == "overall")
                      & (F.col("metric") != "request_latency_curve"))
               .select("metric", "delta_abs", "delta_rel", "ci_rel_lower", "ci_rel_upper").toPandas())  # fmt: skip
    rel = overall[["delta_rel", "ci_rel_lower", "ci_rel_upper"]].astype(float).to_numpy()
    undefined = ~np.isfinite(rel).all(axis=1) & np.isfinite(
        overall["delta_abs"].astype(float).to_numpy()
    )
    control_zero = set(overall.loc[undefined, "metric"])
    assert control_zero, "the FHOL lake has a metric with a control of 0 (HoL-blocked time)"
    forest = _text(_cell(nb, "forest"))
    absolute_line = next(line for line in forest.splitlines() if "own absolute axis" in line)
    for metric in control_zero:
        assert f"[{metric}]" in absolute_line, absolute_line

    summary = json.loads(
        next(line for line in _text(_cell(nb, "summary")).splitlines() if line.startswith("{"))
    )
    assert summary["experiment"] == EXPERIMENT and summary["as_of"] == str(as_of)
    assert summary["verdicts"] == {r["treatment_arm"]: r["verdict"] for r in verdicts}
    assert summary["cards"] == len(tested) and summary["units"] > 100
    for figure in ("cards.png", "forest.png", "units.png"):
        assert (figures / figure).stat().st_size > 10_000
