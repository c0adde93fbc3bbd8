"""Each health check against simulated fleets where it must fire and where it must not.

The simulator's experiment faults (simulation/scenario.py, ``ExperimentFaults``) break one
experiment's data the way real fleets do: treatment uploads that never arrive (sample ratio
mismatch), clients that switch arms (crossover), the treatment's worst-network clients whose
requests stop being reported (differential missingness), an assignment that follows the network
(pre-period imbalance at the configured split). Each fault, over 20 seeds, must fail its check in
at least 19 and make the verdict ``invalid``; on the clean fleet every check's false-alarm rate
over 100 seeds must stay within its nominal level. Seeds are reduced in memory to the counts and
sums the warehouse forms (_health_frames), so a seed costs a fraction of a second.
"""

from __future__ import annotations

from datetime import date

import pandas as pd
import pytest
from _health_frames import reduce
from scipy import stats as sps

from simulation.scenario import validate_scenario
from stats.decision import decide
from stats.engine import analyze
from stats.health import HealthSettings, gate_checks
from stats.settings import AnalysisSettings, DecisionPlan, DecisionSettings, MetricRole

CLIENTS = 2000
START = date(2026, 6, 14)
SPLIT = {"e": {"control": 0.5, "treatment": 0.5}}
S = HealthSettings()
ROLES = (
    MetricRole(role="success", metric="request_latency", better="decrease", minimum_effect=0.01),
    MetricRole(role="guardrail", metric="retransmit_rate", better="decrease", margin=0.05),
    MetricRole(role="guardrail", metric="search_abandoning_clients", better="decrease", margin=0.05),
    MetricRole(role="mechanism", metric="hol_blocked_time_per_request", better="increase"),
)
GATED = {"e": {"request_latency", "retransmit_rate", "search_abandoning_clients"}}
DECISION = DecisionSettings(experiments={"e": DecisionPlan(roles=ROLES, start_date=START)})


def scenario(seed: int, faults: dict | None = None, days: int = 2, clients: int = CLIENTS):
    """A small FHOL fleet (browser and search), a pre-period day, then the experiment."""
    return validate_scenario({
        "name": "health", "seed": seed, "days": days, "start_date": START.isoformat(),
        "population": {"clients": clients}, "apps": {"browser": 0.7, "search": 0.3},
        "workloads": {"http": {"transactions_per_session": 4}},
        "experiments": [{"id": "e", "start_day": 1, "faults": faults or {}, "arms": [
            {"name": "control"},
            {"name": "treatment", "transport": {"stream_mode": "single_stream"}}]}],
    })  # fmt: skip


def health(seed: int, faults: dict | None = None, days: int = 2, clients: int = CLIENTS):
    counts, stats = reduce(scenario(seed, faults, days, clients), "e")
    return gate_checks(counts, stats, SPLIT, GATED, S), stats


def failed(rows: pd.DataFrame, check: str, gates_only: bool = True) -> bool:
    r = rows[rows["check"] == check]
    if gates_only:
        r = r[r["is_gate"].astype(bool)]
    return bool((r["passed"] == False).any())  # noqa: E712


#: each fault, the days it needs (an arm switch shows from the experiment's second day), the
#: fleet size and the check it must fail. A pre-period imbalance is a difference of means of
#: heavy-tailed latencies: a third of the arm's best networks swapped is found at 6,000 clients
#: (at 2,000 the balance test's p-values are 0.001-0.05, above its Bonferroni threshold)
FAULTS = {
    "dropped_uploads": ({"dropped_uploads": 0.3}, 2, CLIENTS, "srm"),
    "arm_switches": ({"arm_switches": 0.03}, 3, CLIENTS, "crossover"),
    "missing_telemetry": ({"missing_telemetry": 0.2, "missing_kinds": ["http_transactions"]}, 2,
                          CLIENTS, "telemetry_completeness"),
    "assignment_bias": ({"assignment_bias": 0.3}, 2, 6000, "pre_period_balance"),
}  # fmt: skip


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_each_fault_fails_its_check_and_invalidates_the_verdict(fault):
    faults, days, clients, check = FAULTS[fault]
    fired, invalid = 0, 0
    for seed in range(1, 21):
        rows, stats = health(seed, faults, days, clients)
        if failed(rows, check):
            fired += 1
            verdict = decide(analyze(stats, AnalysisSettings(expected_split=SPLIT)), DECISION, rows)
            v = verdict.verdicts.iloc[0]
            invalid += v["verdict"] == "invalid" and f"gate_failed:{check}" in v["reasons"]
    assert fired >= 19, f"{fault}: {check} failed in {fired} of 20 seeds"
    assert invalid == fired


#: nominal false-alarm rate of each check on clean data (docs/stats.md, "Health checks"): a gate
#: family's level (Bonferroni over its members), every warning metric at its own level, and no
#: crossover at all (assignment is a deterministic hash)
NOMINAL = {"srm": S.srm_alpha, "srm_platform": S.srm_platform_alpha, "crossover": 0.0,
           "pre_period_balance": S.balance_alpha, "telemetry_completeness": S.completeness_alpha}  # fmt: skip


def test_clean_fleets_raise_no_more_false_alarms_than_each_checks_level():
    alarms = dict.fromkeys(NOMINAL, 0)
    warnings = {"pre_period_balance": [0, 0], "telemetry_completeness": [0, 0]}
    for seed in range(101, 201):
        rows, _ = health(seed)
        for check in NOMINAL:
            alarms[check] += failed(rows, check)
        for check, tally in warnings.items():
            w = rows[(rows["check"] == check) & ~rows["is_gate"].astype(bool)]
            tally[0] += int((w["passed"] == False).sum())  # noqa: E712
            tally[1] += len(w)
    for check, level in NOMINAL.items():
        # the rate is within its level unless 100 seeds reject that at 0.1%
        allowed = sps.binom.ppf(0.999, 100, level) if level else 0
        assert alarms[check] <= allowed, f"{check}: {alarms[check]} false alarms in 100 seeds"
    for check, (fired, tested) in warnings.items():
        assert tested >= 80 and fired <= sps.binom.ppf(0.999, tested, S.balance_alpha), check
