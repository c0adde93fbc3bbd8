"""Input row checks of the stats engine: one message per impossible row, the rest is analysed.

Checked (and nothing else claimed): required fields present, known metric kind, n_units >= 2,
the columns each kind needs, no negative count or sum of squares, variances not negative,
proportions within [0, n_units], ratio denominators not 0, quantile p in (0, 1), the fraction
of events below the quantile (sum_s / sum_n) within [0, 1], n_events == sum_n, a usable grid,
one row per arm, and one metric kind for all arms of a comparison.

This module sits at the I/O edge (pandas); the maths never sees a bad row.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from stats.schema import ARRAY_COLUMNS, GROUP_COLUMNS, METRIC_KINDS, NEEDED, SUM_COLUMNS

#: relative tolerance below which a computed variance counts as negative
_NEG_TOL = 1e-9


class SchemaError(ValueError):
    """The table lacks required columns (nothing can be analysed)."""


def normalize(table: pd.DataFrame, required: list[str]) -> pd.DataFrame:
    """Copy of ``table`` with typed columns, absent optional columns added, and ``row_id``.

    Raises:
        SchemaError: a required column is missing.
    """
    missing = [c for c in required if c not in table.columns]
    if missing:
        raise SchemaError(f"input is missing required column(s): {', '.join(missing)}")
    df = table.reset_index(drop=True).copy()
    df["row_id"] = np.arange(len(df))
    for c in [*SUM_COLUMNS, "n_units"]:
        df[c] = pd.to_numeric(df[c], errors="coerce").astype(float) if c in df else np.nan
    for c in ARRAY_COLUMNS:
        if c not in df:
            df[c] = None
    for c in ("experiment_id", "metric", "segment_type", "segment_value", "arm", "metric_kind"):
        col = df[c]
        df[c] = col.where(col.isna(), col.astype(str).str.strip()).astype(object)
    df["metric_kind"] = df["metric_kind"].str.lower()
    df["is_control"] = _to_bool(df["is_control"])
    df["is_guardrail"] = _to_bool(df["is_guardrail"]) if "is_guardrail" in df else False
    # datetime64 inside (fast grouping); the engine writes dates out as datetime.date
    df["as_of_date"] = pd.to_datetime(df["as_of_date"], errors="coerce").dt.normalize()
    df["quantile_key"] = df["quantile_p"].where(df["metric_kind"] == "quantile", -1.0).fillna(-1.0)
    return df


def _to_bool(s: pd.Series) -> pd.Series:
    if s.dtype == bool:
        return s
    text = s.astype("string").str.strip().str.lower()
    return text.isin(["true", "1", "t", "yes", "y", "1.0"]).fillna(False).astype(bool)


def _negative(sq: pd.Series, s: pd.Series, n: pd.Series) -> pd.Series:
    """n * sum_sq - sum^2 < 0 beyond rounding: a negative variance."""
    m2 = n * sq - s * s
    return m2 < -_NEG_TOL * (n * sq).abs().clip(lower=1.0)


def row_problems(df: pd.DataFrame) -> pd.Series:
    """Reason string per row ('' when the row is usable)."""
    reasons: list[pd.Series] = []

    def add(mask: pd.Series, text: object, *values: pd.Series) -> None:
        """Reason ``text`` on the rows of ``mask``; ``{}`` fields are filled from ``values``."""
        hit = mask.fillna(True).to_numpy(bool)
        out = np.full(len(df), "", dtype=object)
        if values and hit.any():
            cols = [v.to_numpy()[hit] for v in values]
            out[hit] = [
                str(text).format(*(f"{x:g}" for x in vals)) for vals in zip(*cols, strict=True)
            ]
        else:
            out[hit] = text if np.ndim(text) == 0 else np.asarray(text, dtype=object)[hit]
        reasons.append(pd.Series(out, index=df.index))

    kind = df["metric_kind"]
    add(df["arm"].isna() | (df["arm"] == ""), "missing arm")
    for c in ("experiment_id", "metric", "segment_type", "segment_value"):
        add(df[c].isna(), f"missing {c}")
    add(df["as_of_date"].isna(), "missing or invalid as_of_date")
    add(~kind.isin(METRIC_KINDS), "unknown metric kind " + kind.fillna("<null>").map(repr))
    add(~(df["n_units"] >= 2), "n_units < 2")
    n = df["n_units"]
    for k, cols in NEEDED.items():
        is_k = kind == k
        for c in cols:
            add(is_k & df[c].isna(), f"{k} metric without {c}")
    is_mean, is_ratio = kind.isin(["mean"]), kind == "ratio"
    add(
        (is_mean | is_ratio) & _negative(df["sum_y2"], df["sum_y"], n).fillna(False),
        "negative variance (sum_y2)",
    )
    add(
        is_ratio & _negative(df["sum_x2"], df["sum_x"], n).fillna(False),
        "negative variance (sum_x2)",
    )
    add(is_ratio & ~(df["sum_x"] != 0), "ratio metric with sum_x = 0")
    is_prop = kind == "proportion"
    add(
        is_prop & ~((df["sum_y"] >= 0) & (df["sum_y"] <= n)),
        "proportion sum_y outside [0, n_units]",
    )
    for c in ("sum_y2", "sum_x2", "sum_c2", "sum_d2", "sum_s2", "sum_n2"):
        add((df[c] < 0).fillna(False), f"negative sum of squares {c} = {{}}", df[c])
    # counts: a ratio's denominator counts events (registry/metrics.yml), and every
    # quantile column counts events (the per-unit s_i, n_i are counts)
    add(is_ratio & (df["sum_x"] < 0).fillna(False), "negative count sum_x = {}", df["sum_x"])
    is_q = kind == "quantile"
    for c in ("n_events", "sum_s", "sum_n", "sum_sn"):
        add(is_q & (df[c] < 0).fillna(False), f"negative count {c} = {{}}", df[c])
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = df["sum_s"] / df["sum_n"]
    add(
        is_q & (df["sum_n"] > 0).fillna(False) & ~((frac >= 0) & (frac <= 1)).fillna(True),
        "fraction below the quantile sum_s / sum_n = {} outside [0, 1]",
        frac,
    )
    add(
        is_q & (df["n_events"] != df["sum_n"]).fillna(False),
        "n_events = {} differs from sum_n",
        df["n_events"],
        df["sum_n"],
    )
    add(is_q & ~((df["quantile_p"] > 0) & (df["quantile_p"] < 1)), "quantile_p outside (0, 1)")
    add(is_q & ~(df["n_events"] >= 2), "n_events < 2")
    add(
        is_q
        & (
            _negative(df["sum_s2"], df["sum_s"], n) | _negative(df["sum_n2"], df["sum_n"], n)
        ).fillna(False),
        "negative variance (sum_s2 or sum_n2)",
    )
    add(is_q & ~df["grid_ok"], "grid_p/grid_value need >= 2 points, increasing p, same length")
    dup = df.duplicated([*GROUP_COLUMNS, "quantile_key", "arm"], keep=False) & df["arm"].notna()
    add(dup, "duplicate row for this arm")
    mixed = (
        df.groupby(GROUP_COLUMNS, dropna=False, sort=False)["metric_kind"].transform("nunique") > 1
    )
    listed = pd.Series("", index=df.index, dtype=object)
    if mixed.any():
        sub = df[mixed].groupby(GROUP_COLUMNS, dropna=False, sort=False)["metric_kind"]
        listed[mixed] = sub.transform(lambda k: ", ".join(sorted(k.dropna().unique())))
    add(mixed, "arms of this comparison have different metric kinds: " + listed)
    text = np.full(len(df), "", dtype=object)
    for r in reasons:
        part = r.to_numpy(dtype=object)
        text = np.where(part == "", text, np.where(text == "", part, text + "; " + part))
    return pd.Series(text, index=df.index, dtype=object)


def parse_grid(value: object) -> np.ndarray | None:
    """A grid cell as a float array: list/array (Parquet) or a JSON list string (CSV)."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return None
    try:
        arr = np.asarray(value, dtype=float).ravel()
    except (TypeError, ValueError):
        return None
    return arr


def grid_matrices(df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """NaN-padded (rows, k) grid arrays of the quantile rows and a per-row validity mask.

    Non-quantile rows get an all-NaN grid and ``ok = True`` (they do not use one).
    """
    is_q = (df["metric_kind"] == "quantile").to_numpy(bool)
    rows = np.flatnonzero(is_q)
    gps = [parse_grid(v) for v in df["grid_p"].to_numpy(dtype=object)[rows]]
    gvs = [parse_grid(v) for v in df["grid_value"].to_numpy(dtype=object)[rows]]
    k = max([len(a) for a in gps + gvs if a is not None], default=2)
    gp = np.full((len(df), max(k, 2)), np.nan)
    gv = np.full_like(gp, np.nan)
    for i, a, b in zip(rows, gps, gvs, strict=True):
        if a is not None and b is not None and len(a) == len(b) >= 2:
            gp[i, : len(a)], gv[i, : len(b)] = a, b
    n_p = np.isfinite(gp).sum(axis=1)
    filled = np.isfinite(gp[:, :2]).all(axis=1)
    with np.errstate(invalid="ignore"):
        dp, dv = np.diff(gp, axis=1), np.diff(gv, axis=1)
    pad = ~np.isfinite(dp)  # differences that involve padding
    ok = (
        filled
        & (n_p == np.isfinite(gv).sum(axis=1))
        & np.where(pad, True, dp > 0).all(axis=1)
        & np.where(pad, True, dv >= 0).all(axis=1)
    )
    return gp, gv, ok | ~is_q


def describe(row: pd.Series) -> str:
    """Short human name of an input row for messages (row = 0-based position in the input)."""
    day = row["as_of_date"]
    day = day.date().isoformat() if isinstance(day, pd.Timestamp) else day
    return (
        f"row {row['row_id']} ({row['experiment_id']}/{row['metric']}/"
        f"{row['segment_type']}={row['segment_value']}/arm={row['arm']}/{day})"
    )
