"""Input row checks of the stats engine: one message per impossible row, the rest is analysed.

Checked (and nothing else claimed): required fields present, known metric kind, n_units >= 2
and whole, every number finite, the columns each kind needs, no negative count or sum of
squares, variances not negative, covariances within Cauchy-Schwarz, proportions whole and
within [0, n_units], ratio denominators not 0, quantile p in (0, 1), the quantile's counts
whole with s_i <= n_i (sum_s2 <= sum_sn <= sum_n2), the fraction of events below the quantile
(sum_s / sum_n) within [0, 1] and where quantile_p and the grid put it, the quantile value
inside the grid's values around p, n_events == sum_n, a usable grid, no negative value of a
metric the metric registry says cannot be negative, one row per arm, and one metric kind for
all arms of a comparison.

This module sits at the I/O edge (pandas); the maths never sees a bad row.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from stats.schema import ARRAY_COLUMNS, GROUP_COLUMNS, METRIC_KINDS, NEEDED, SUM_COLUMNS

#: relative tolerance below which a computed variance counts as negative
_NEG_TOL = 1e-9
#: relative tolerance of the other identities (whole numbers, orderings, the grid)
_TOL = 1e-9
#: (kinds, a, b, column of sum a*b): pairs of per-unit values whose covariance the row gives;
#: each must satisfy Cauchy-Schwarz, cov(a, b)^2 <= var(a) var(b)
_CROSS = (
    (("ratio",), "y", "x", "sum_xy"),
    (("mean", "proportion", "ratio"), "y", "c", "sum_yc"),
    (("ratio",), "y", "d", "sum_yd"),
    (("ratio",), "x", "c", "sum_xc"),
    (("ratio",), "x", "d", "sum_xd"),
    (("ratio",), "c", "d", "sum_cd"),
    (("quantile",), "s", "n", "sum_sn"),
)
#: the quantile's columns that count events (or sum products of counts): whole numbers
_QUANTILE_COUNTS = ("n_events", "sum_s", "sum_n", "sum_s2", "sum_n2", "sum_sn")


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


def _not_whole(x: pd.Series) -> pd.Series:
    """Finite values that are not whole numbers (beyond rounding)."""
    return (np.isfinite(x) & ((x - x.round()).abs() > _TOL * x.abs().clip(lower=1.0))).fillna(False)


def _beyond_cauchy_schwarz(
    n: pd.Series, sa: pd.Series, saa: pd.Series, sb: pd.Series, sbb: pd.Series, sab: pd.Series
) -> pd.Series:
    """(n sab - sa sb)^2 > (n saa - sa^2)(n sbb - sb^2) beyond rounding: a correlation above 1."""
    cov = n * sab - sa * sb
    excess = cov * cov - (n * saa - sa * sa) * (n * sbb - sb * sb)
    return (excess > _NEG_TOL * ((n * saa) * (n * sbb)).abs().clip(lower=1.0)).fillna(False)


@lru_cache(maxsize=8)
def _metrics_file_for(env: tuple[tuple[str, str], ...]) -> Path:
    """The metric registry's path under these QUICEXP_* variables (Settings.metrics_file)."""
    from quicexp.config import load_settings

    return load_settings().metrics_file


@lru_cache(maxsize=8)
def _non_negative_in(path: Path, mtime_ns: int, size: int) -> frozenset[str]:
    from quicexp.metrics import load_metrics

    return load_metrics(path).non_negative_names


def registry_non_negative() -> frozenset[str]:
    """The metrics the configured metric registry says cannot be negative (by unit,
    quicexp.metrics); read once per environment and file state, so that a simulation calling
    the engine thousands of times does not read it each time.

    Raises:
        quicexp.errors.ConfigError: the registry is missing or invalid (one line).
    """
    env = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("QUICEXP_")))
    path = _metrics_file_for(env)
    try:
        stat = path.stat()
    except OSError:
        from quicexp.metrics import load_metrics

        load_metrics(path)  # the one-line error naming the file
        raise
    return _non_negative_in(path, stat.st_mtime_ns, stat.st_size)


def _quantile_grid_problems(
    df: pd.DataFrame, grid_p: np.ndarray, grid_value: np.ndarray
) -> tuple[pd.Series, pd.Series, pd.Series, pd.Series, pd.Series, pd.Series, pd.Series]:
    """Where a quantile row's value and fraction below disagree with its grid.

    The grid is the empirical quantile function Q(g) = X(ceil(N g)) and q = Q(p)
    (docs/stats.md), so for every grid point g: Q(g) <= q exactly when g <= F(q), with
    F(q) = sum_s / sum_n the fraction of events at or below q. Hence q lies between the grid's
    values at the grid points around p, and F(q) lies in [L, U): L the largest of p and the g
    with Q(g) <= q, U the smallest g with Q(g) > q (1 when none is).

    Returns (q outside, low value, high value, F outside, F, L, U), one value per row.
    """
    q = df["quantile_value"].to_numpy(float)[:, None]
    p = df["quantile_p"].to_numpy(float)[:, None]
    valid = np.isfinite(grid_p) & np.isfinite(grid_value)
    n_valid = valid.sum(axis=1)
    rows = np.arange(len(df))
    with np.errstate(invalid="ignore"):
        n_below = (valid & (grid_p <= p)).sum(axis=1)  # grid_p increases: a prefix
        n_under = (valid & (grid_p < p)).sum(axis=1)
        low = np.where(n_below > 0, grid_value[rows, np.maximum(n_below - 1, 0)], np.nan)
        last = grid_value.shape[1] - 1
        high = np.where(n_under < n_valid, grid_value[rows, np.minimum(n_under, last)], np.nan)
        tol = _TOL * np.fmax(np.fmax(np.abs(q[:, 0]), np.abs(low)), np.abs(high))
        q_out = (q[:, 0] < low - tol) | (q[:, 0] > high + tol)
        at_or_below = valid & (grid_value <= q)
        above = valid & (grid_value > q + _TOL * np.abs(q))
        below_q = np.where(at_or_below, grid_p, -np.inf).max(axis=1, initial=-np.inf)
        lower = np.fmin(1.0, np.fmax(p[:, 0], below_q))  # a grid_p past 1 (unclipped) bounds at 1
        upper = np.fmin(1.0, np.where(above, grid_p, np.inf).min(axis=1, initial=np.inf))
        frac = (df["sum_s"] / df["sum_n"]).to_numpy(float)
        f_out = (frac < lower - _TOL) | (frac > upper + _TOL)
    idx = df.index
    return (
        pd.Series(q_out, index=idx), pd.Series(low, index=idx), pd.Series(high, index=idx),
        pd.Series(f_out, index=idx), pd.Series(frac, index=idx),
        pd.Series(lower, index=idx), pd.Series(upper, index=idx),
    )  # fmt: skip


class _Reasons:
    """Reasons collected per row; :meth:`text` joins a row's reasons with '; '."""

    def __init__(self, df: pd.DataFrame) -> None:
        self.df = df
        self.parts: list[tuple[np.ndarray, np.ndarray]] = []  # (rows hit, their reason)

    def add(self, mask: pd.Series, text: object, *values: pd.Series) -> None:
        """Reason ``text`` on the rows of ``mask``; ``{}`` fields are filled from ``values``."""
        hit = mask.fillna(True).to_numpy(bool)
        if not hit.any():
            return
        if values:
            cols = [v.to_numpy()[hit] for v in values]
            out = [str(text).format(*(f"{x:g}" for x in vals)) for vals in zip(*cols, strict=True)]
            self.parts.append((hit, np.asarray(out, dtype=object)))
        elif np.ndim(text) == 0:
            self.parts.append((hit, np.full(int(hit.sum()), text, dtype=object)))
        else:
            self.parts.append((hit, np.asarray(text, dtype=object)[hit]))

    def text(self) -> pd.Series:
        text = np.full(len(self.df), "", dtype=object)
        for hit, reason in self.parts:
            before = text[hit]
            text[hit] = np.where(before == "", reason, before + "; " + reason)
        return pd.Series(text, index=self.df.index, dtype=object)


def row_problems(
    df: pd.DataFrame,
    non_negative: Collection[str] | None = None,
    grids: tuple[np.ndarray, np.ndarray] | None = None,
) -> pd.Series:
    """Reason string per row ('' when the row is usable).

    Args:
        df: the table as :func:`normalize` returns it, with ``grid_ok`` (:func:`grid_matrices`).
        non_negative: metrics whose values cannot be negative; default: the configured metric
            registry's (:func:`registry_non_negative`).
        grids: the (grid_p, grid_value) matrices of :func:`grid_matrices`; default: parsed again.
    """
    if non_negative is None:
        non_negative = registry_non_negative()
    grid_p, grid_value = grids if grids is not None else grid_matrices(df)[:2]
    r = _Reasons(df)
    _field_problems(r, df)
    _moment_problems(r, df)
    _quantile_problems(r, df, grid_p, grid_value)
    _sign_problems(r, df, non_negative, grid_value)
    _comparison_problems(r, df)
    return r.text()


def _field_problems(r: _Reasons, df: pd.DataFrame) -> None:
    """Identifiers, kind, n_units, finite numbers, the columns each kind needs."""
    kind = df["metric_kind"]
    r.add(df["arm"].isna() | (df["arm"] == ""), "missing arm")
    for c in ("experiment_id", "metric", "segment_type", "segment_value"):
        r.add(df[c].isna(), f"missing {c}")
    r.add(df["as_of_date"].isna(), "missing or invalid as_of_date")
    r.add(~kind.isin(METRIC_KINDS), "unknown metric kind " + kind.fillna("<null>").map(repr))
    r.add(~(df["n_units"] >= 2), "n_units < 2")
    r.add(_not_whole(df["n_units"]), "n_units = {} is not a whole number of units", df["n_units"])
    for c in ("n_units", *SUM_COLUMNS):
        infinite = pd.Series(np.isinf(df[c].to_numpy(float)), index=df.index)
        r.add(infinite, f"{c} = {{}} is not finite", df[c])
    for k, cols in NEEDED.items():
        is_k = kind == k
        for c in cols:
            r.add(is_k & df[c].isna(), f"{k} metric without {c}")


def _moment_problems(r: _Reasons, df: pd.DataFrame) -> None:
    """Variances, covariances (Cauchy-Schwarz), sums of squares, counts, proportions."""
    kind, n = df["metric_kind"], df["n_units"]
    is_ratio, is_prop = kind == "ratio", kind == "proportion"
    r.add(
        kind.isin(["mean", "ratio"]) & _negative(df["sum_y2"], df["sum_y"], n).fillna(False),
        "negative variance (sum_y2)",
    )
    r.add(
        is_ratio & _negative(df["sum_x2"], df["sum_x"], n).fillna(False),
        "negative variance (sum_x2)",
    )
    r.add(is_ratio & ~(df["sum_x"] != 0), "ratio metric with sum_x = 0")
    r.add(
        is_prop & ~((df["sum_y"] >= 0) & (df["sum_y"] <= n)),
        "proportion sum_y outside [0, n_units]",
    )
    r.add(
        is_prop & _not_whole(df["sum_y"]),
        "proportion sum_y = {} is not a whole number of units",
        df["sum_y"],
    )
    # Cauchy-Schwarz: the covariance of two per-unit values is at most the product of their
    # standard deviations (a proportion's y is 0/1, so its sum of squares is sum_y)
    y2 = df["sum_y2"].where(~is_prop, df["sum_y"])
    for kinds, a, b, cross in _CROSS:
        sq_a = y2 if a == "y" else df[f"sum_{a}2"]
        beyond = _beyond_cauchy_schwarz(
            n, df[f"sum_{a}"], sq_a, df[f"sum_{b}"], df[f"sum_{b}2"], df[cross]
        )
        r.add(
            kind.isin(kinds) & beyond,
            f"{cross} = {{}} puts the covariance of {a} and {b} beyond Cauchy-Schwarz",
            df[cross],
        )
    for c in ("sum_y2", "sum_x2", "sum_c2", "sum_d2", "sum_s2", "sum_n2"):
        r.add((df[c] < 0).fillna(False), f"negative sum of squares {c} = {{}}", df[c])
    # counts: a ratio's denominator counts events (registry/metrics.yml)
    r.add(is_ratio & (df["sum_x"] < 0).fillna(False), "negative count sum_x = {}", df["sum_x"])


def _quantile_problems(
    r: _Reasons, df: pd.DataFrame, grid_p: np.ndarray, grid_value: np.ndarray
) -> None:
    """The quantile columns: counts (the per-unit s_i, n_i count events), their order, the
    fraction below the quantile, the grid and how the value and the fraction sit on it."""
    is_q, n = df["metric_kind"] == "quantile", df["n_units"]
    for c in ("n_events", "sum_s", "sum_n", "sum_sn"):
        r.add(is_q & (df[c] < 0).fillna(False), f"negative count {c} = {{}}", df[c])
    for c in _QUANTILE_COUNTS:
        r.add(
            is_q & _not_whole(df[c]), f"{c} = {{}} is not a whole number (it counts events)", df[c]
        )
    # 0 <= s_i <= n_i in every unit, so s_i^2 <= s_i n_i <= n_i^2
    s2, sn, n2 = df["sum_s2"], df["sum_sn"], df["sum_n2"]
    r.add(
        is_q & ((s2 > sn + _TOL * sn.abs()) | (sn > n2 + _TOL * n2.abs())).fillna(False),
        "sum_s2 = {}, sum_sn = {}, sum_n2 = {} are not in order: no unit has more events at or"
        " below the quantile than events",
        s2, sn, n2,
    )  # fmt: skip
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = df["sum_s"] / df["sum_n"]
    in_01 = ((frac >= 0) & (frac <= 1)).fillna(False)
    r.add(
        is_q & (df["sum_n"] > 0).fillna(False) & ~in_01,
        "fraction below the quantile sum_s / sum_n = {} outside [0, 1]",
        frac,
    )
    r.add(
        is_q & (df["n_events"] != df["sum_n"]).fillna(False),
        "n_events = {} differs from sum_n",
        df["n_events"],
        df["sum_n"],
    )
    p_ok = (df["quantile_p"] > 0) & (df["quantile_p"] < 1)
    r.add(is_q & ~p_ok, "quantile_p outside (0, 1)")
    r.add(is_q & ~(df["n_events"] >= 2), "n_events < 2")
    r.add(
        is_q
        & (
            _negative(df["sum_s2"], df["sum_s"], n) | _negative(df["sum_n2"], df["sum_n"], n)
        ).fillna(False),
        "negative variance (sum_s2 or sum_n2)",
    )
    r.add(is_q & ~df["grid_ok"], "grid_p/grid_value need >= 2 points, increasing p, same length")
    q_out, low, high, f_out, frac, lower, upper = _quantile_grid_problems(df, grid_p, grid_value)
    on_grid = is_q & df["grid_ok"] & p_ok
    r.add(
        on_grid & q_out,
        "quantile_value = {} is outside the grid's values around quantile_p, [{}, {}]",
        df["quantile_value"], low, high,
    )  # fmt: skip
    r.add(
        on_grid & (df["sum_n"] > 0).fillna(False) & in_01 & f_out,
        "fraction at or below the quantile sum_s / sum_n = {} disagrees with quantile_p and the"
        " grid (it is in [{}, {}) for this quantile_value)",
        frac, lower, upper,
    )  # fmt: skip


def _sign_problems(
    r: _Reasons, df: pd.DataFrame, non_negative: Collection[str], grid_value: np.ndarray
) -> None:
    """A metric the registry says cannot be negative has no negative sum or quantile."""
    kind = df["metric_kind"]
    nonneg = df["metric"].isin(list(non_negative))
    with np.errstate(invalid="ignore"):
        lowest = np.where(np.isfinite(grid_value), grid_value, np.inf).min(axis=1, initial=np.inf)
    grid_min = pd.Series(lowest, index=df.index)
    r.add(
        nonneg & (kind == "quantile") & ((df["quantile_value"] < 0) | (grid_min < 0)).fillna(False),
        "quantile_value = {} (grid down to {}) is negative, and the metric cannot be",
        df["quantile_value"], grid_min,
    )  # fmt: skip
    r.add(
        nonneg & kind.isin(["mean", "ratio"]) & (df["sum_y"] < 0).fillna(False),
        "sum_y = {} is negative, and the metric cannot be",
        df["sum_y"],
    )


def _comparison_problems(r: _Reasons, df: pd.DataFrame) -> None:
    """One row per arm, one metric kind for all arms of a comparison."""
    dup = df.duplicated([*GROUP_COLUMNS, "quantile_key", "arm"], keep=False) & df["arm"].notna()
    r.add(dup, "duplicate row for this arm")
    mixed = (
        df.groupby(GROUP_COLUMNS, dropna=False, sort=False)["metric_kind"].transform("nunique") > 1
    )
    listed = pd.Series("", index=df.index, dtype=object)
    if mixed.any():
        sub = df[mixed].groupby(GROUP_COLUMNS, dropna=False, sort=False)["metric_kind"]
        listed[mixed] = sub.transform(lambda k: ", ".join(sorted(k.dropna().unique())))
    r.add(mixed, "arms of this comparison have different metric kinds: " + listed)


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
