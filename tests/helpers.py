"""Small helpers shared by tests (no fixtures here: see conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

#: The real console entry point of the pipeline environment (what users and Airflow run).
QUICEXP = str(Path(sys.executable).parent / "quicexp")


def quicexp(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run ``quicexp ARGS`` as a process, as a user or a scheduler would; output captured."""
    return subprocess.run(
        [QUICEXP, *args], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
        env=env if env is not None else dict(os.environ),
    )  # fmt: skip


def sorted_frame(spark, table: str, float_digits: int = 9) -> pd.DataFrame:
    """A table as a pandas frame in a canonical row order, floats rounded to ``float_digits``
    significant digits, for order-independent equality checks of reruns."""
    frame = spark.table(table).toPandas()
    for column in frame.columns:
        if pd.api.types.is_float_dtype(frame[column]):
            frame[column] = frame[column].map(lambda v: float(f"{v:.{float_digits}g}") if pd.notna(v) else v)
        elif frame[column].map(lambda v: isinstance(v, (list, dict))).any():
            frame[column] = frame[column].map(repr)
    return frame.sort_values(list(frame.columns), na_position="first").reset_index(drop=True)
