"""Bad input on purpose, so that ingestion is exercised like on real client uploads.

For ``n`` clean events of a batch, with the scenario's :class:`~simulation.scenario.Faults` rates
(fractions of ``n``; counts are ``round(rate * n)``, chosen without replacement, so produced rates
match configured ones):

* **late uploads** – the upload happens 1–5 days after the event (client offline), so the event
  lands in a later ``upload_date`` than its event date;
* **clock skew** – the client clock is off by ±5 minutes to ±3 days (log-uniform): ``event_time``
  is shifted, ``upload_time`` (server clock) is not;
* **duplicates** – client retries: the same event (same ``event_id``, same payload) uploaded again
  seconds to hours later, possibly in a later ``upload_date``;
* **schema violations** – a required field is null, or (JSON only) carries a value of the wrong
  type;
* **malformed lines** – (JSON only) extra lines that are not valid JSON (truncated uploads,
  binary garbage). Parquet cannot hold such lines, so Parquet runs report none.

Upload delays of clean events are log-normal (median 2 minutes), so some events near midnight
are uploaded the next day, as in real fleets.

An experiment's own faults (:class:`~simulation.scenario.ExperimentFaults`) break its data the way
fleets do, for the health checks (docs/stats.md, "Health checks"): :func:`assignment_faults`
changes who is in which arm (an assignment that follows the network; clients that switch arms),
:func:`event_mask` which events arrive (one arm's uploads lost; one arm's worst-network clients
no longer reporting some kinds). Both are functions of the client and the day only, so a client
is hit the same way in every kind and every run.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from quicexp.telemetry import fields
from simulation.hashing import hash2, str_key
from simulation.scenario import Faults, Scenario

DAY_MS = 86_400_000
COMMON_PROTECTED = ("event_id", "event_type", "schema_version", "upload_time")


@dataclass
class FaultPlan:
    event_time_ms: np.ndarray
    upload_time_ms: np.ndarray
    duplicate_rows: np.ndarray  # rows to emit twice
    duplicate_upload_ms: np.ndarray
    violation_rows: np.ndarray
    violation_fields: np.ndarray  # object array of field names
    violation_wrong_type: np.ndarray  # bool: wrong type (JSON) rather than null
    malformed: int
    counts: dict[str, int]


def _pick(rng: np.random.Generator, n: int, rate: float) -> np.ndarray:
    k = round(rate * n)
    if k == 0 or n == 0:
        return np.zeros(0, dtype=np.int64)
    return np.sort(rng.choice(n, size=min(k, n), replace=False))


def violable_fields(kind: str) -> list[str]:
    """Required fields a schema violation may hit (never the id, type, version or upload time)."""
    return [f.name for f in fields(kind) if not f.nullable and f.name not in COMMON_PROTECTED]


def plan_faults(rng: np.random.Generator, kind: str, t_ms: np.ndarray, rates: Faults, fmt: str) -> FaultPlan:
    """Decide which rows of a batch get which bad input; returns the times to write too."""
    n = len(t_ms)
    delay = np.exp(np.log(120_000.0) + 1.5 * rng.standard_normal(n)).clip(200.0, 6 * 3_600_000.0)
    upload = t_ms + delay.astype(np.int64)
    event_time = t_ms.copy()

    late = _pick(rng, n, rates.late_uploads)
    upload[late] = t_ms[late] + rng.integers(DAY_MS, 5 * DAY_MS, size=len(late))
    skewed = _pick(rng, n, rates.clock_skew)
    mag = np.exp(rng.uniform(np.log(300_000.0), np.log(3 * DAY_MS), size=len(skewed)))
    event_time[skewed] += (np.where(rng.random(len(skewed)) < 0.5, -1, 1) * mag).astype(np.int64)

    dups = _pick(rng, n, rates.duplicates)
    dup_upload = upload[dups] + np.exp(rng.uniform(np.log(1_000.0), np.log(8 * 3_600_000.0), size=len(dups))).astype(np.int64)

    viol = _pick(rng, n, rates.schema_violations)
    candidates = np.array(violable_fields(kind), dtype=object)
    vfields = candidates[rng.integers(0, len(candidates), size=len(viol))]
    wrong = (rng.random(len(viol)) < 0.5) if fmt == "jsonl" else np.zeros(len(viol), dtype=bool)

    malformed = round(rates.malformed_lines * n) if fmt == "jsonl" else 0
    counts = {
        "late_uploads": len(late),
        "clock_skewed": len(skewed),
        "duplicates": len(dups),
        "schema_violations": len(viol),
        "schema_violations_null": int((~wrong).sum()),
        "schema_violations_wrong_type": int(wrong.sum()),
        "malformed_lines": malformed,
    }
    return FaultPlan(event_time, upload, dups, dup_upload, viol, vfields, wrong, malformed, counts)


def malformed_lines(rng: np.random.Generator, sample_lines: list[bytes], k: int) -> list[bytes]:
    """``k`` lines that do not parse as JSON: truncated copies of real lines, or binary garbage."""
    out = []
    for i in range(k):
        if sample_lines and i % 3 != 2:
            line = sample_lines[i % len(sample_lines)]
            cut = max(1, int(len(line) * rng.uniform(0.2, 0.9)))
            out.append(line[:cut].rstrip(b"}") + b"\n")
        else:
            junk = bytes(rng.integers(1, 256, size=int(rng.integers(8, 64)), dtype=np.uint8)).replace(b"\n", b" ")
            out.append(b"\x1f\x8b" + junk + b"\n")  # a gzip header where JSON should start
    return out


def network_badness(network: dict[str, np.ndarray]) -> np.ndarray:
    """How bad each client's network is: base RTT x (1 + 100 x loss rate) (a 1% loss weighs like
    doubling the RTT)."""
    return network["rtt_ms"] * (1.0 + 100.0 * network["loss"])


def _uniform(client_u64: np.ndarray, experiment_id: str, purpose: str) -> np.ndarray:
    """A uniform [0, 1) per client, fixed for the experiment and the purpose."""
    return hash2(client_u64, str_key("quicexp-fault", experiment_id, purpose)) / np.float64(2**64)


def _worst(badness: np.ndarray, members: np.ndarray, share: float) -> np.ndarray:
    """The ``share`` of ``members`` (indices) with the worst networks."""
    k = round(share * len(members))
    return members[np.argsort(-badness[members], kind="stable")[:k]]


def assignment_faults(scenario: Scenario, client_u64: np.ndarray, network: dict[str, np.ndarray],
                      arms: np.ndarray, day: int) -> np.ndarray:  # fmt: skip
    """``arms`` (experiments x clients, -1 = not enrolled) after each experiment's assignment
    faults on ``day``: ``assignment_bias`` swaps the faulty arm's best-network clients with as
    many of the other arms' worst (every day the same clients, so the split stays as configured
    and the arms differ before the experiment); ``arm_switches`` moves a share of the enrolled
    clients to the next arm from the experiment's second day."""
    out = arms.copy()
    badness = network_badness(network)
    for i, exp in enumerate(scenario.experiments):
        f = exp.faults
        if day < exp.start_day:
            continue
        if f.assignment_bias > 0:
            members = np.flatnonzero(out[i] == exp.fault_arm)
            others = np.flatnonzero((out[i] >= 0) & (out[i] != exp.fault_arm))
            k = min(round(f.assignment_bias * len(members)), len(others))
            best = members[np.argsort(badness[members], kind="stable")[:k]]
            worst = _worst(badness, others, 1.0)[:k]
            out[i][best], out[i][worst] = out[i][worst], exp.fault_arm
        if f.arm_switches > 0 and day > exp.start_day:
            switch = (out[i] >= 0) & (_uniform(client_u64, exp.id, "switch") < f.arm_switches)
            out[i][switch] = (out[i][switch] + 1) % len(exp.arms)
    return out


def event_mask(scenario: Scenario, client_u64: np.ndarray, network: dict[str, np.ndarray],
               arms: np.ndarray, day: int, kind: str, client: np.ndarray) -> np.ndarray | None:  # fmt: skip
    """Which events of ``kind`` (their clients: ``client``, block indices) arrive on ``day``, or
    None when all do: ``dropped_uploads`` loses every event of a share of the faulty arm's
    clients, ``missing_telemetry`` the events of ``missing_kinds`` of its worst-network share."""
    lost = np.zeros(len(client_u64), dtype=bool)
    badness = None
    for i, exp in enumerate(scenario.experiments):
        f = exp.faults
        if day < exp.start_day or not (f.dropped_uploads or f.missing_telemetry):
            continue
        in_arm = arms[i] == exp.fault_arm
        if f.dropped_uploads > 0:
            lost |= in_arm & (_uniform(client_u64, exp.id, "drop") < f.dropped_uploads)
        if f.missing_telemetry > 0 and kind in f.missing_kinds:
            badness = network_badness(network) if badness is None else badness
            lost[_worst(badness, np.flatnonzero(in_arm), f.missing_telemetry)] = True
    return ~lost[client] if lost.any() else None
