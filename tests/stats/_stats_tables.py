"""Small input tables in the documented contract, built from per-unit data."""

from __future__ import annotations

import numpy as np
import pandas as pd


def mean_rows(rng: np.random.Generator, metric: str = "m", n: int = 500, arms=("A", "B"),
              segment=("overall", "all"), day: str = "2026-01-01", shift: float = 0.0,
              experiment: str = "e1", guardrail: bool = False) -> list[dict]:  # fmt: skip
    rows = []
    for i, arm in enumerate(arms):
        y = rng.lognormal(0, 1, n) + (shift if i else 0.0)
        c = y + rng.normal(0, 1, n)
        rows.append({
            "experiment_id": experiment, "metric": metric, "metric_kind": "mean",
            "is_guardrail": guardrail, "segment_type": segment[0], "segment_value": segment[1],
            "arm": arm, "is_control": i == 0, "as_of_date": day, "n_units": n,
            "sum_y": y.sum(), "sum_y2": (y * y).sum(),
            "sum_c": c.sum(), "sum_c2": (c * c).sum(), "sum_yc": (y * c).sum(),
        })  # fmt: skip
    return rows


def quantile_rows(rng: np.random.Generator, n: int = 300, p: float = 0.95) -> list[dict]:
    rows = []
    for i, arm in enumerate(("A", "B")):
        units = [
            np.exp(rng.normal(u, 0.8, k))
            for u, k in zip(rng.normal(0, 0.5, n), 1 + rng.poisson(3, n), strict=True)
        ]
        allv = np.sort(np.concatenate(units))
        q = allv[int(np.ceil(allv.size * p)) - 1]
        s = np.array([(v <= q).sum() for v in units], float)
        k = np.array([v.size for v in units], float)
        grid = p + np.array([-8, -4, -2, -1, 0, 1, 2, 4, 8]) * np.sqrt(p * (1 - p) / allv.size)
        gv = allv[np.clip(np.ceil(allv.size * grid).astype(int) - 1, 0, allv.size - 1)]
        rows.append({
            "experiment_id": "e1", "metric": "latency_p95", "metric_kind": "quantile",
            "is_guardrail": False, "segment_type": "overall", "segment_value": "all", "arm": arm,
            "is_control": i == 0, "as_of_date": "2026-01-01", "n_units": n, "quantile_p": p,
            "quantile_value": q, "n_events": float(allv.size), "sum_s": s.sum(),
            "sum_s2": (s * s).sum(), "sum_n": k.sum(), "sum_n2": (k * k).sum(),
            "sum_sn": (s * k).sum(), "grid_p": list(grid), "grid_value": list(gv),
        })  # fmt: skip
    return rows


def table(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows)
