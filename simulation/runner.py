"""Run a scenario: days × client blocks in parallel processes, then the manifest.

Each task simulates one day for one block of clients (:data:`simulation.population.BLOCK`) with its
own seeded random streams, so the output depends only on the scenario and seed, never on the number
of workers or the order tasks finish in. A task writes its own files (batch ids carry the event
day and block), so tasks never write the same file.
"""

from __future__ import annotations

import datetime as dt
import multiprocessing
import os
import time
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from quicexp.telemetry import EVENT_KINDS, SCHEMA_VERSION
from simulation.apps.common import EventBatch
from simulation.apps.http import browser_events
from simulation.apps.pages import page_events
from simulation.apps.search import search_events
from simulation.apps.video import video_events
from simulation.events import BlockContext, build_table, concat_batches
from simulation.faults import assignment_faults, event_mask, malformed_lines, plan_faults
from simulation.hashing import hash2, str_key
from simulation.population import block_count, make_block
from simulation.scenario import APPS, Scenario, ScenarioError, load_scenario
from simulation.sessions import make_sessions
from simulation.treatment import arm_matrix, client_transport
from simulation.writer import (
    DAY_MS,
    FORMATS,
    batch_path,
    day_str,
    json_lines,
    upload_dates,
    write_jsonl_gz,
    write_manifest,
    write_parquet,
)

KIND_CODE = {k: i + 1 for i, k in enumerate(EVENT_KINDS)}


def _rng(scenario: Scenario, day: int, block: int, stream: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([scenario.seed, day, block, stream]))


def generate_block(
    scenario: Scenario, day: int, block: int, force_arms: dict[str, str] | None = None
) -> tuple[BlockContext, dict[str, EventBatch]]:
    """All events (clean, true times) of one day for one block of clients.

    ``force_arms`` (experiment id -> arm name) puts every enrolled client of those experiments in
    the given arm: the counterfactual world where everyone got that arm. Random streams do not
    depend on the arms, so worlds differ only by the transport (common random numbers).
    """
    pop = make_block(
        scenario.seed,
        block,
        scenario.population.clients,
        scenario.population.sessions_per_day,
        scenario.population.platform_shares,
        (scenario.population.rtt_factor, scenario.population.bandwidth_factor, scenario.population.loss_factor),
        scenario.population.network_shares,
    )
    arms = assignment_faults(scenario, pop.client_u64, pop.network, arm_matrix(scenario, pop.client_u64, day), day)
    for exp_id, arm_name in (force_arms or {}).items():
        i = next(i for i, e in enumerate(scenario.experiments) if e.id == exp_id)
        arms[i][arms[i] >= 0] = [a.name for a in scenario.experiments[i].arms].index(arm_name)
    tp = client_transport(scenario, arms)
    day_start = int((dt.datetime.combine(scenario.start_date, dt.time()) - dt.datetime(1970, 1, 1)).total_seconds() * 1000) + day * DAY_MS
    sess = make_sessions(_rng(scenario, day, block, 1), pop, day_start, scenario.apps, day_key=day_start)
    ctx = BlockContext(scenario, pop, sess, arms)
    out: dict[str, list[EventBatch]] = defaultdict(list)
    wl = scenario.workloads
    gens = {
        "browser": lambda r, idx: browser_events(r, sess, idx, pop, tp, wl.http, wl.header_compression),
        "search": lambda r, idx: search_events(r, sess, idx, pop, tp, wl.search),
        "video": lambda r, idx: video_events(r, sess, idx, pop, tp, wl.video),
    }
    for code, app in enumerate(APPS):
        idx = np.flatnonzero(sess.app == code)
        if len(idx) == 0:
            continue
        for kind, batch in gens[app](_rng(scenario, day, block, 10 + code), idx).items():
            out[kind].append(batch)
        if app == "browser" and wl.page.pages_per_session > 0:
            for kind, batch in page_events(_rng(scenario, day, block, 20), sess, idx, pop, tp, wl.page).items():
                out[kind].append(batch)
    batches = {k: concat_batches(v) for k, v in out.items() if sum(len(b) for b in v)}
    for kind, batch in list(batches.items()):
        keep = event_mask(scenario, pop.client_u64, pop.network, arms, day, kind, sess.client[batch.session])
        if keep is not None:
            batches[kind] = batch.subset(keep)
    return ctx, {k: b for k, b in batches.items() if len(b)}


def _sim_date(scenario: Scenario, day: int) -> str:
    return (scenario.start_date + dt.timedelta(days=day)).isoformat()


def _null_out(table: pa.Table, rows: np.ndarray, field: str) -> pa.Table:
    col = table.column(field).combine_chunks()
    mask = np.zeros(len(table), dtype=bool)
    mask[rows] = True
    flat = col.type.num_fields == 0 and not pa.types.is_dictionary(col.type)
    if flat and col.offset == 0:  # swap in a validity bitmap
        if col.null_count:
            mask |= col.is_null().to_numpy(zero_copy_only=False)
        bitmap = pa.py_buffer(np.packbits(~mask, bitorder="little"))
        new = pa.Array.from_buffers(col.type, len(col), [bitmap, *col.buffers()[1:]], null_count=int(mask.sum()))
    else:
        new = pc.if_else(pa.array(mask), pa.nulls(len(table), col.type), col)
    i = table.schema.get_field_index(field)
    return table.set_column(i, pa.field(field, col.type, nullable=True), new)


def write_kind(scenario: Scenario, ctx: BlockContext, kind: str, batch: EventBatch, day: int, block: int, out: Path, fmt: str) -> dict:
    """Apply faults, build the table and write one file per upload day; returns counts."""
    rng = _rng(scenario, day, block, 100 + KIND_CODE[kind])
    n = len(batch)
    key = str_key("event", scenario.name, scenario.seed, kind, day, block)
    ids = hash2(np.arange(n, dtype=np.uint64), key)
    plan = plan_faults(rng, kind, batch.t_ms, scenario.faults, fmt)
    rows = np.concatenate([np.arange(n), plan.duplicate_rows])
    upload = np.concatenate([plan.upload_time_ms, plan.duplicate_upload_ms])
    # rows grouped by upload day (stably: each day keeps the generated order), so that each day's
    # file is a zero-copy slice of the table instead of a gather of every column
    days = upload_dates(upload)
    order = np.argsort(days, kind="stable")
    position = np.empty_like(order)
    position[order] = np.arange(len(order))
    rows, upload, days = rows[order], upload[order], days[order]
    table = build_table(kind, batch, ctx, ids, plan.event_time_ms, upload, rows=rows, upload_aligned=True)
    violations: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for field in np.unique(plan.violation_fields):
        sel = plan.violation_fields == field
        violations[str(field)] = (position[plan.violation_rows[sel]], plan.violation_wrong_type[sel])
    if fmt == "parquet":
        for field, (vrows, _) in violations.items():
            table = _null_out(table, vrows, field)
    batch_id = f"{scenario.name}-{_sim_date(scenario, day).replace('-', '')}-b{block:04d}"
    written: dict[str, int] = {}
    lines = json_lines(kind, table, violations) if fmt == "jsonl" else None
    sample = [lines[int(position[i])].as_py().encode() for i in range(min(3, len(lines)))] if lines is not None else []
    bad = malformed_lines(rng, sample, plan.malformed) if lines is not None else []
    bad_day = days[position[rng.integers(0, len(days), size=len(bad))]] if len(days) else np.zeros(len(bad), dtype=np.int64)
    for d in np.unique(np.concatenate([days, bad_day])):
        start, stop = np.searchsorted(days, [d, d + 1])
        path = batch_path(out, int(d), kind, batch_id, fmt)
        if fmt == "jsonl":
            extra = [b for b, bd in zip(bad, bad_day, strict=True) if bd == d]
            write_jsonl_gz(path, lines.slice(start, stop - start), extra)
            written[day_str(int(d))] = int(stop - start) + len(extra)
        else:
            write_parquet(path, table.slice(start, stop - start))
            written[day_str(int(d))] = int(stop - start)
    return {"events": n, "rows_by_upload_date": written, "bad_input": plan.counts}


def run_task(scenario: Scenario, day: int, block: int, out: str, fmt: str) -> dict:
    """One (day, block): generate and write every kind; returns counts for the manifest."""
    t0, c0 = time.perf_counter(), time.process_time()
    ctx, batches = generate_block(scenario, day, block)
    t1 = time.perf_counter()
    result = {"day": day, "block": block, "kinds": {}}
    for kind, batch in sorted(batches.items()):
        result["kinds"][kind] = write_kind(scenario, ctx, kind, batch, day, block, Path(out), fmt)
    result["seconds_generate"] = t1 - t0
    result["seconds_write"] = time.perf_counter() - t1
    result["cpu_seconds"] = time.process_time() - c0
    return result


def _merge(results: list[dict], scenario: Scenario) -> dict:
    events_by_day: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    rows_by_upload: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    bad: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for r in results:
        date = _sim_date(scenario, r["day"])
        for kind, c in r["kinds"].items():
            events_by_day[kind][date] += c["events"]
            for d, k in c["rows_by_upload_date"].items():
                rows_by_upload[kind][d] += k
            for t, k in c["bad_input"].items():
                bad[kind][t] += k
    totals = defaultdict(int)
    for per in bad.values():
        for t, k in per.items():
            totals[t] += k
    sort = lambda d: {k: dict(sorted(v.items())) for k, v in sorted(d.items())}  # noqa: E731
    return {
        "events_by_event_date": sort(events_by_day),
        "rows_by_upload_date": sort(rows_by_upload),
        "bad_input_by_kind": sort(bad),
        "bad_input": dict(sorted(totals.items())),
        "events_total": int(sum(sum(v.values()) for v in events_by_day.values())),
    }


def run_scenario(
    scenario: str | Path | Scenario,
    out_dir: str | Path,
    *,
    days: int | None = None,
    clients: int | None = None,
    seed: int | None = None,
    fmt: str = "jsonl",
    start_date: str | dt.date | None = None,
    workers: int | None = None,
    progress: bool = False,
) -> dict:
    """Simulate ``scenario`` into the landing zone ``out_dir``; returns the manifest (also written)."""
    if fmt not in FORMATS:
        raise ScenarioError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    sc = load_scenario(scenario).with_overrides(days=days, clients=clients, seed=seed, start_date=start_date)
    out = Path(out_dir)
    tasks = [(d, b) for d in range(sc.days) for b in range(block_count(sc.population.clients))]
    workers = workers if workers is not None else min(len(tasks), os.cpu_count() or 1)
    t0 = time.perf_counter()
    results = _execute(sc, tasks, str(out), fmt, workers, progress)
    elapsed = time.perf_counter() - t0
    results.sort(key=lambda r: (r["day"], r["block"]))
    manifest = {
        "scenario": sc.name,
        "seed_experiment": sc.seed_experiment,
        "seed": sc.seed,
        "start_date": str(sc.start_date),
        "days": sc.days,
        "clients": sc.population.clients,
        "format": fmt,
        "schema_version": SCHEMA_VERSION,
        "experiments": {e.id: [a.name for a in e.arms] for e in sc.experiments},
        "faults": sc.faults.model_dump(),
        "layout": "upload_date=YYYY-MM-DD/<kind>/<batch_id>." + ("jsonl.gz" if fmt == "jsonl" else "parquet"),
        **_merge(results, sc),
    }
    write_manifest(out, manifest)
    manifest["seconds"] = elapsed
    manifest["seconds_generate"] = sum(r["seconds_generate"] for r in results)
    manifest["seconds_write"] = sum(r["seconds_write"] for r in results)
    manifest["cpu_seconds"] = sum(r["cpu_seconds"] for r in results)
    return manifest


def _execute(sc: Scenario, tasks: list[tuple[int, int]], out: str, fmt: str, workers: int, progress: bool) -> list[dict]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(TextColumn(f"simulate {sc.name}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), disable=not progress)
    results = []
    with bar:
        job = bar.add_task("tasks", total=len(tasks))
        if workers <= 1:
            for d, b in tasks:
                results.append(run_task(sc, d, b, out, fmt))
                bar.advance(job)
        else:
            # forkserver, not fork: callers often hold a live Py4J (Spark) gateway socket, and
            # forked children closing it on exit reset the parent's connection.
            context = multiprocessing.get_context("forkserver")
            with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
                futures = [pool.submit(run_task, sc, d, b, out, fmt) for d, b in tasks]
                for fut in as_completed(futures):
                    results.append(fut.result())
                    bar.advance(job)
    return results
