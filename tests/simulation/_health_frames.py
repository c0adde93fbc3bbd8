"""The simulator's events reduced with pandas to what the warehouse hands the health checks.

For one experiment on the scenario's last day: the health counts (assigned and crossover units per
arm, overall and per platform: models/marts/experiment_health_counts.sql) and the overall
sufficient statistics of a few registry metrics with their CUPED pre-period sums
(models/marts/experiment_sufficient_stats.sql). The metric definitions are registry/metrics.yml's,
written again over the simulator's columns; a unit is a client seen with the assignment since the
experiment started, its pre-period every event of the client before that. Events come straight
from :func:`simulation.runner.generate_block` (no files, no Spark), so a seed costs a fraction of a
second.
"""

from __future__ import annotations

from datetime import date, timedelta

import numpy as np
import pandas as pd

from simulation.network import PLATFORMS
from simulation.population import block_count
from simulation.runner import generate_block
from simulation.scenario import Scenario

#: metric -> (kind, event kind, numerator column, denominator column or None: one per event)
METRICS = {
    "request_latency": ("ratio", "http_transactions", "latency_ms", None),
    "request_latency_per_client": ("mean", "http_transactions", "latency_ms", None),
    "hol_blocked_time_per_request": ("ratio", "http_transactions", "hol_blocked_ms", None),
    "retransmit_rate": ("ratio", "connections", "packets_retransmitted", "packets_sent"),
    "search_abandoning_clients": ("proportion", "search_queries", "abandoned", None),
}
KINDS = sorted({k for _, k, _, _ in METRICS.values()})


def events(scenario: Scenario, experiment_id: str) -> dict[str, pd.DataFrame]:
    """Per event kind: client, day, arm (None outside the experiment), platform and the metric
    columns of every event of the scenario's days."""
    i = next(j for j, e in enumerate(scenario.experiments) if e.id == experiment_id)
    names = np.asarray([a.name for a in scenario.experiments[i].arms] + [None], dtype=object)
    parts: dict[str, list[pd.DataFrame]] = {k: [] for k in KINDS}
    for day in range(scenario.days):
        for block in range(block_count(scenario.population.clients)):
            ctx, batches = generate_block(scenario, day, block)
            for kind in KINDS:
                if kind not in batches:
                    continue
                b = batches[kind]
                client = ctx.sess.client[b.session]
                cols = {c for _, k, n, d in METRICS.values() if k == kind for c in (n, d) if c}
                frame = pd.DataFrame({c: b.cols[c].astype(float) for c in cols})
                frame["client"] = ctx.pop.index[client]
                frame["platform"] = np.asarray(PLATFORMS, dtype=object)[ctx.pop.platform[client]]
                frame["arm"] = names[ctx.arms[i, client]]
                frame["day"] = day
                parts[kind].append(frame)
    return {k: pd.concat(v, ignore_index=True) for k, v in parts.items() if v}


def reduce(scenario: Scenario, experiment_id: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(health counts, overall sufficient statistics) of ``experiment_id`` as of the last day."""
    exp = next(e for e in scenario.experiments if e.id == experiment_id)
    control = exp.arms[0].name
    as_of = scenario.start_date + timedelta(days=scenario.days - 1)
    ev = events(scenario, experiment_id)
    inside = {k: f[(f["day"] >= exp.start_day) & f["arm"].notna()] for k, f in ev.items()}
    seen = pd.concat([f[["client", "arm", "platform"]] for f in inside.values()])
    units = seen.groupby(["client", "arm"], as_index=False)["platform"].min()
    arms_seen = units.groupby("client")["arm"].transform("nunique")
    units["crossover"] = arms_seen > 1
    counts = _counts(units, experiment_id, control, as_of)
    rows = []
    for metric, (kind, source, num, den) in METRICS.items():
        f = inside.get(source)
        if f is None or f.empty:
            continue
        per_unit = _unit_sums(f, ["client", "arm"], num, den)
        pre = ev[source][ev[source]["day"] < exp.start_day]
        pre_unit = _unit_sums(pre, ["client"], num, den).rename(
            columns={"num": "pre_num", "den": "pre_den", "n": "pre_n"})  # fmt: skip
        u = per_unit.merge(pre_unit, on="client", how="left").fillna({"pre_num": 0.0, "pre_den": 0.0, "pre_n": 0})
        y, x, c, d = _values(kind, u)
        for arm, g in u.assign(y=y, x=x, c=c, d=d).groupby("arm"):
            rows.append(_sums(g, kind) | {"experiment_id": experiment_id, "metric": metric,
                                           "metric_kind": kind, "arm": arm, "is_control": arm == control,
                                           "as_of_date": as_of})  # fmt: skip
    stats = pd.DataFrame(rows)
    stats["segment_type"], stats["segment_value"] = "overall", "all"
    stats["is_guardrail"], stats["quantile_p"] = False, np.nan
    return counts, stats


def _counts(units: pd.DataFrame, experiment_id: str, control: str, as_of: date) -> pd.DataFrame:
    rows = []
    for seg_type, key in (("overall", None), ("platform", "platform")):
        groups = [("all", units)] if key is None else list(units.groupby(key))
        for value, g in groups:
            distinct = g["client"].nunique()
            crossed = g.loc[g["crossover"], "client"].nunique()
            for arm, a in g.groupby("arm"):
                rows.append({"experiment_id": experiment_id, "arm": arm, "is_control": arm == control,
                             "as_of_date": as_of, "segment_type": seg_type, "segment_value": value,
                             "units": len(a), "crossover_units": int(a["crossover"].sum()),
                             "experiment_units": distinct, "experiment_crossover_units": crossed})  # fmt: skip
    return pd.DataFrame(rows)


def _unit_sums(f: pd.DataFrame, keys: list[str], num: str, den: str | None) -> pd.DataFrame:
    g = f.assign(den=f[den] if den else 1.0).groupby(keys)
    return pd.DataFrame({"num": g[num].sum(), "den": g["den"].sum(), "n": g.size()}).reset_index()


def _values(kind: str, u: pd.DataFrame) -> tuple:
    """y, x, c, d of each unit as the mart forms them (macro unit_value; 0 without pre-period)."""
    has_pre = u["pre_n"] > 0
    if kind == "ratio":
        return u["num"], u["den"], u["pre_num"].where(has_pre, 0.0), u["pre_den"].where(has_pre, 0.0)
    if kind == "mean":
        c = (u["pre_num"] / u["pre_den"].where(u["pre_den"] > 0)).where(has_pre, 0.0)
        return u["num"] / u["den"], None, c, None
    return (u["num"] > 0).astype(float), None, ((u["pre_num"] > 0) & has_pre).astype(float), None


def _sums(g: pd.DataFrame, kind: str) -> dict:
    y, c = g["y"].to_numpy(float), g["c"].to_numpy(float)
    out = {"n_units": float(len(g)), "n_events": float(g["n"].sum()), "sum_y": y.sum(),
           "sum_y2": (y * y).sum()}  # fmt: skip
    has_pre = bool((g["pre_n"] > 0).any())
    if has_pre:
        out |= {"sum_c": c.sum(), "sum_c2": (c * c).sum(), "sum_yc": (y * c).sum()}
    if kind == "ratio":
        x, d = g["x"].to_numpy(float), g["d"].to_numpy(float)
        out |= {"sum_x": x.sum(), "sum_x2": (x * x).sum(), "sum_xy": (x * y).sum()}
        if has_pre:
            out |= {"sum_d": d.sum(), "sum_d2": (d * d).sum(), "sum_cd": (c * d).sum(),
                    "sum_yd": (y * d).sum(), "sum_xc": (x * c).sum(), "sum_xd": (x * d).sum()}  # fmt: skip
    return out
