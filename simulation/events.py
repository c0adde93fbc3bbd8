"""Turn generated :class:`~simulation.apps.common.EventBatch` arrays into typed Arrow tables.

Adds the common fields of every event (ids, client, session, platform, network, app, experiments,
times) and converts code columns to their strings, producing exactly
:func:`quicexp.telemetry.arrow_schema` of the kind.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from quicexp.telemetry import SCHEMA_VERSION, arrow_schema, event_type, fields
from simulation.apps.common import EventBatch
from simulation.apps.pages import SIZE_CLASSES
from simulation.hashing import hex_ids
from simulation.network import NETWORK_TYPES, PLATFORMS
from simulation.population import APP_VERSIONS, Population
from simulation.scenario import APPS, Scenario
from simulation.sessions import Sessions
from simulation.transport import CC_CODES, HDR_CODES

SCHEDULERS = ("single_path", "min_rtt", "reinjection", "qoe_reinjection")
CATEGORIES: dict[str, tuple[str, ...]] = {
    "protocol": ("h3",),
    "congestion_control": CC_CODES,
    "scheduler": SCHEDULERS,
    "scheme": HDR_CODES,
    "prioritization": ("sequential", "round_robin"),
    "page_size_class": SIZE_CLASSES,
    "path_network_type": NETWORK_TYPES,
}
ID_COLUMNS = ("connection_id",)


def concat_batches(batches: list[EventBatch]) -> EventBatch:
    """One batch from several of the same kind (e.g. connections of all apps)."""
    if len(batches) == 1:
        return batches[0]
    kind = batches[0].kind
    names = list(batches[0].cols)
    nulls = {}
    for name in {n for b in batches for n in b.nulls}:
        nulls[name] = np.concatenate([b.nulls.get(name, np.zeros(len(b), dtype=bool)) for b in batches])
    return EventBatch(
        kind,
        np.concatenate([b.session for b in batches]),
        np.concatenate([b.t_ms for b in batches]),
        {n: np.concatenate([b.cols[n] for b in batches]) for n in names},
        nulls,
    )


@dataclass
class BlockContext:
    """What the common fields need about one (day, block) of the run."""

    scenario: Scenario
    pop: Population
    sess: Sessions
    arms: np.ndarray  # experiments x clients (block-local), -1 = not enrolled

    def __post_init__(self) -> None:
        self.client_ids = hex_ids(self.pop.client_u64)
        self.session_ids = hex_ids(self.sess.session_u64)
        exp_ids = [e.id for e in self.scenario.experiments]
        self._exp_keys = pa.array(exp_ids, pa.string())
        names = [a.name for e in self.scenario.experiments for a in e.arms]
        self._arm_names = pa.array(names, pa.string())
        self._arm_offset = np.cumsum([0] + [len(e.arms) for e in self.scenario.experiments])[:-1]

    def experiments_map(self, client: np.ndarray) -> pa.MapArray:
        """experiment id -> arm name of each row's client."""
        arms = self.arms[:, client]  # E x R
        rows, exps = np.nonzero(arms.T >= 0)  # row-major: sorted by row
        counts = np.bincount(rows, minlength=len(client))
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
        keys = self._exp_keys.take(pa.array(exps))
        items = self._arm_names.take(pa.array(self._arm_offset[exps] + arms.T[rows, exps]))
        return pa.MapArray.from_arrays(pa.array(offsets), keys, items, type=pa.map_(pa.string(), pa.string()))


def _codes(values: tuple[str, ...], codes: np.ndarray) -> pa.Array:
    return pa.array(values, pa.string()).take(pa.array(np.asarray(codes, dtype=np.int64)))


def build_table(
    kind: str,
    batch: EventBatch,
    ctx: BlockContext,
    event_ids: np.ndarray,
    event_time_ms: np.ndarray,
    upload_time_ms: np.ndarray,
    rows: np.ndarray | None = None,
    *,
    upload_aligned: bool = False,
) -> pa.Table:
    """The Arrow table of ``batch`` (optionally only/duplicated ``rows``) in the kind's schema.

    ``event_ids`` and ``event_time_ms`` are per batch event; ``upload_time_ms`` too, unless
    ``upload_aligned`` says it is already per output row (retries upload the same event later).
    """
    idx = np.arange(len(batch)) if rows is None else rows
    upload = upload_time_ms if upload_aligned else upload_time_ms[idx]
    session = batch.session[idx]
    client = ctx.sess.client[session]
    ts = pa.timestamp("ms", tz="UTC")
    common = {
        "event_id": hex_ids(event_ids[idx], width=32),
        "event_type": pa.array(np.full(len(idx), event_type(kind))) if len(idx) else pa.array([], pa.string()),
        "schema_version": pa.array(np.full(len(idx), SCHEMA_VERSION, dtype=np.int64)),
        "client_id": ctx.client_ids.take(pa.array(client)),
        "session_id": ctx.session_ids.take(pa.array(session)),
        "event_time": pa.array(event_time_ms[idx].astype(np.int64), ts),
        "upload_time": pa.array(upload.astype(np.int64), ts),
        "platform": _codes(PLATFORMS, ctx.pop.platform[client]),
        "network_type": _codes(NETWORK_TYPES, ctx.pop.net[client]),
        "app": _codes(APPS, ctx.sess.app[session]),
        "app_version": _codes(APP_VERSIONS, ctx.pop.app_version[client]),
        "experiments": ctx.experiments_map(client),
    }
    schema = arrow_schema(kind)
    arrays = []
    for f in fields(kind):
        if f.name in common:
            arrays.append(common[f.name])
            continue
        values = batch.cols[f.name][idx]
        mask = batch.nulls.get(f.name)
        mask = None if mask is None else mask[idx]
        if f.name in CATEGORIES:
            arr = _codes(CATEGORIES[f.name], values)
        elif f.name in ID_COLUMNS:
            arr = hex_ids(values)
        else:
            arr = pa.array(values, schema.field(f.name).type, mask=mask)
        if mask is not None and f.name in CATEGORIES:
            arr = pa.array(arr.to_numpy(zero_copy_only=False), pa.string(), mask=mask)
        arrays.append(arr)
    return pa.Table.from_arrays(arrays, schema=schema)
