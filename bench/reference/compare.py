"""Compare the pipeline's outputs with the DuckDB reference's (bench/reference/driver.py).

Counts exactly (ingest audit per file, quarantine per reason, n_units, bins), statistics within
1e-9 relative. The engines' logarithms may put a value that sits on a quantile bin edge on the
two sides of it (Spark's StrictMath log vs DuckDB's libm log differ in the last bit): such moved
values are counted from the two binned tables, and the quantile rows of that histogram may then
differ; how many rows, and by how many bins their estimate moved, is reported, and the difference
is accepted only when no estimate moved by more bins than values moved. Everything else differing
is a failure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

RTOL = 1e-9
KEYS = ["experiment_id", "metric", "segment_type", "segment_value", "arm", "as_of_date", "quantile_p"]
EXACT = ["metric_kind", "is_guardrail", "is_control", "n_units"]
FLOATS = ["sum_y", "sum_y2", "sum_x", "sum_x2", "sum_xy", "sum_c", "sum_c2", "sum_yc", "sum_d", "sum_d2",
          "sum_cd", "sum_yd", "sum_xc", "sum_xd", "quantile_value", "n_events", "sum_s", "sum_s2", "sum_n",
          "sum_n2", "sum_sn"]
ARRAYS = ["grid_p", "grid_value"]
QUANTILE_COLUMNS = {"quantile_value", "sum_s", "sum_s2", "sum_sn", "grid_value"}


@dataclass
class Comparison:
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures

    def lines(self) -> list[str]:
        head = "outputs equal" if self.ok else f"outputs DIFFER ({len(self.failures)} problems)"
        return [head] + [f"  {n}" for n in self.notes] + [f"  FAIL {f}" for f in self.failures[:30]]


def _close(a, b) -> bool:
    if a is None or b is None or (isinstance(a, float) and math.isnan(a)) or (isinstance(b, float) and math.isnan(b)):
        return (a is None or a != a) and (b is None or b != b)
    a, b = float(a), float(b)
    return abs(a - b) <= RTOL * max(abs(a), abs(b)) or abs(a - b) <= 1e-300


def _counts(con, name: str, keys: list[str], counts: list[str], pipe: str, ref: str, out: Comparison) -> None:
    on = " and ".join(f"p.{k} is not distinct from r.{k}" for k in keys)
    differ = " or ".join(f"p.{c} is distinct from r.{c}" for c in counts)
    rows = con.execute(f"select {', '.join('coalesce(p.' + k + ', r.' + k + ')' for k in keys)}, "
                       f"{', '.join('p.' + c for c in counts)}, {', '.join('r.' + c for c in counts)} "
                       f"from {pipe} p full join {ref} r on {on} where {differ}").fetchall()
    total = con.execute(f"select count(*) from {ref}").fetchall()[0][0]
    for row in rows:
        out.failures.append(f"{name} {row[:len(keys)]}: pipeline {row[len(keys):len(keys) + len(counts)]}, "
                            f"reference {row[len(keys) + len(counts):]}")
    if not rows:
        out.notes.append(f"{name}: {total} rows, every count equal")


def compare(pipeline_dir: Path, reference_dir: Path, bin_width: float) -> Comparison:
    out = Comparison()
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    for side, d in (("p", pipeline_dir), ("r", reference_dir)):
        for t in ("audit", "quarantine", "sufficient_stats", "binned"):
            con.execute(f"create view {side}_{t} as select * from read_parquet('{d / t}/**/*.parquet', union_by_name = true)"
                        if (d / t).is_dir() else f"create view {side}_{t} as select * from '{d / t}.parquet'")
    _counts(con, "ingest audit", ["kind", "upload_date", "file"],
            ["rows_read", "rows_loaded", "rows_quarantined", "rows_duplicate", "rows_late"], "p_audit", "r_audit", out)
    _counts(con, "quarantine", ["kind", "upload_date", "reason"], ["n"], "p_quarantine", "r_quarantine", out)

    # values on the other side of a bin edge: per metric, how many events changed bin
    moved = dict(con.execute("""
        select metric, sum(abs(coalesce(p.n_events, 0) - coalesce(r.n_events, 0))) // 2
        from p_binned p full join r_binned r using (client_id, event_date, assignments, metric, value_bin)
        where p.n_events is distinct from r.n_events group by metric""").fetchall())
    total_binned = con.execute("select sum(n_events) from r_binned").fetchall()[0][0] or 0
    if moved:
        out.notes.append(f"bin edges: {sum(moved.values())} of {total_binned} binned values are in the neighbouring "
                         f"bin in the pipeline ({', '.join(f'{m}: {n}' for m, n in sorted(moved.items()))})")
    else:
        out.notes.append(f"bin edges: all {total_binned} binned values in the same bins")
    _stats(con, moved, bin_width, out)
    con.close()
    return out


def _row_differences(p: tuple, r: tuple) -> list[str]:
    bad = [c for i, c in enumerate(EXACT, 7) if p[i] != r[i]]
    bad += [c for i, c in enumerate(FLOATS, 7 + len(EXACT)) if not _close(p[i], r[i])]
    for i, c in enumerate(ARRAYS, 7 + len(EXACT) + len(FLOATS)):
        if (p[i] is None) != (r[i] is None) or (p[i] is not None and (
                len(p[i]) != len(r[i]) or not all(_close(a, b) for a, b in zip(p[i], r[i], strict=True)))):
            bad.append(c)
    return bad


def _stats(con, moved: dict[str, int], bin_width: float, out: Comparison) -> None:
    from bench.reference.driver import registry_metrics

    hist = {m["name"]: m["histogram_of"] or m["name"] for m in registry_metrics()}
    cols = KEYS + EXACT + FLOATS + ARRAYS
    pipe = {tuple(r[:7]): r for r in con.execute(f"select {', '.join(cols)} from p_sufficient_stats").fetchall()}
    ref = {tuple(r[:7]): r for r in con.execute(f"select {', '.join(cols)} from r_sufficient_stats").fetchall()}
    for key in sorted(set(pipe) ^ set(ref), key=str)[:20]:
        out.failures.append(f"sufficient_stats row {key} only in the {'pipeline' if key in pipe else 'reference'}")
    if set(pipe) ^ set(ref):
        out.failures.append(f"sufficient_stats: {len(set(pipe) - set(ref))} rows only in the pipeline, "
                            f"{len(set(ref) - set(pipe))} only in the reference")
    shifted, max_bins = 0, 0.0
    log_w = math.log1p(bin_width)
    for key in set(pipe) & set(ref):
        p, r = pipe[key], ref[key]
        bad = _row_differences(p, r)
        if not bad:
            continue
        metric = key[1]
        if key[6] is not None and set(bad) <= QUANTILE_COLUMNS and moved.get(hist.get(metric, metric), 0) > 0:
            shifted += 1
            pairs = [(p[7 + len(EXACT) + FLOATS.index("quantile_value")], r[7 + len(EXACT) + FLOATS.index("quantile_value")])]
            gi = 7 + len(EXACT) + len(FLOATS) + 1
            pairs += list(zip(p[gi], r[gi], strict=False))  # grid_p may differ in length too
            bins = max((abs(math.log(a / b)) / log_w for a, b in pairs if a and b and a > 0 and b > 0), default=0.0)
            max_bins = max(max_bins, bins)
            if bins > moved[hist.get(metric, metric)] + 1e-6:
                out.failures.append(f"sufficient_stats {key}: estimate moved {bins:.2f} bins, more than the moved values")
        else:
            out.failures.append(f"sufficient_stats {key}: {', '.join(bad)} differ "
                                f"(pipeline {[p[7 + len(EXACT) + FLOATS.index(c)] for c in bad if c in FLOATS][:3]}, "
                                f"reference {[r[7 + len(EXACT) + FLOATS.index(c)] for c in bad if c in FLOATS][:3]})")
    note = f"sufficient_stats: {len(ref)} rows"
    if shifted:
        note += (f"; {shifted} quantile rows differ only through the moved values, estimates (or grid points) "
                 f"moved by at most {max_bins:.2f} bins = {(math.exp(max_bins * log_w) - 1) * 100:.3f}%")
    else:
        note += f", every statistic within {RTOL:g} relative"
    out.notes.append(note)
