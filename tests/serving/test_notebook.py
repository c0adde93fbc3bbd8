"""notebooks/explore_experiment.ipynb executed with nbclient in its own kernel process (its own
Spark JVM on the shared metastore), against the serving namespace's lake."""

from __future__ import annotations

import os
import subprocess
import sys

import nbformat
import pytest

from quicexp.config import REPO_ROOT
from tests.pipeline_lake import FHOL as EXPERIMENT

NOTEBOOK = REPO_ROOT / "notebooks" / "explore_experiment.ipynb"
KERNEL = "quicexp-pipeline"


@pytest.fixture(scope="module")
def kernel_env(tmp_path_factory, serving):
    """A kernelspec named like the notebook's, for this interpreter, in a private Jupyter path."""
    prefix = tmp_path_factory.mktemp("jupyter")
    subprocess.run(
        [sys.executable, "-m", "ipykernel", "install", "--prefix", str(prefix), "--name", KERNEL,
         "--display-name", "quicexp (pipeline env)"],
        check=True, capture_output=True,
    )  # fmt: skip
    settings = serving.settings
    figures = tmp_path_factory.mktemp("notebook-figures")
    env = {
        "JUPYTER_PATH": str(prefix / "share" / "jupyter"),
        "QUICEXP_HOME": str(settings.home),
        "QUICEXP_LAKE_ROOT": str(settings.lake_root),
        "QUICEXP_METASTORE_DIR": str(settings.metastore_dir),
        "QUICEXP_BRONZE_SCHEMA": settings.bronze_schema,
        "QUICEXP_SILVER_SCHEMA": settings.silver_schema,
        "QUICEXP_GOLD_SCHEMA": settings.gold_schema,
        "QUICEXP_SPARK__DRIVER_MEMORY": "1500m",
        "QUICEXP_NOTEBOOK_EXPERIMENT": EXPERIMENT,
        "QUICEXP_NOTEBOOK_FIGURES": str(figures),
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    yield figures
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def test_notebook_loads_results_and_units_and_plots(kernel_env):
    from nbclient import NotebookClient

    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert nb.metadata["kernelspec"]["name"] == KERNEL
    NotebookClient(
        nb, timeout=1200, kernel_name=KERNEL, resources={"metadata": {"path": str(REPO_ROOT)}}
    ).execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    text = "\n".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
    assert f"'experiment': '{EXPERIMENT}'" in text
    units = int(text.rsplit("'units': ", 1)[1].split("}", 1)[0])
    assert units > 100
    tables = [o for o in outputs if "text/html" in o.get("data", {})]
    assert len(tables) >= 2  # the results table and the per-arm unit summary
    for figure in ("forest.png", "units.png"):
        assert (kernel_env / figure).stat().st_size > 10_000
