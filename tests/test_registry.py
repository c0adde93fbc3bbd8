"""The experiment registry: validation, and agreement with the simulator's scenarios."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from quicexp.config import REPO_ROOT, ConfigError
from quicexp.registry import load_registry


def test_repo_registry_loads():
    registry = load_registry(REPO_ROOT / "registry" / "experiments.yml")
    assert registry.experiments
    for experiment in registry.experiments:
        assert experiment.control.is_control


def test_the_registry_file_is_a_setting(monkeypatch, tmp_path):
    own = tmp_path / "experiments.yml"
    own.write_text(
        "experiments: [{id: own_test, title: t, start_date: 2026-01-01,"
        " arms: [{name: a, share: 0.5, is_control: true}, {name: b, share: 0.5}]}]\n"
    )
    monkeypatch.setenv("QUICEXP_REGISTRY_FILE", str(own))
    assert [e.id for e in load_registry().experiments] == ["own_test"]
    monkeypatch.setenv("QUICEXP_REGISTRY_FILE", str(tmp_path / "missing.yml"))
    with pytest.raises(ConfigError, match="cannot read the experiment registry"):
        load_registry()


def test_every_registered_simulated_experiment_matches_its_scenario():
    """Where a scenario simulates a registered experiment, ids, arms and split agree."""
    registry = {
        e.id: e for e in load_registry(REPO_ROOT / "registry" / "experiments.yml").experiments
    }
    checked = 0
    for path in sorted((REPO_ROOT / "simulation" / "scenarios").glob("*.yaml")):
        scenario = yaml.safe_load(path.read_text())
        for exp in scenario.get("experiments", []):
            if exp["id"] not in registry:
                continue
            registered = registry[exp["id"]]
            weights = {a["name"]: float(a.get("weight", 1)) for a in exp["arms"]}
            total = sum(weights.values())
            assert {a.name for a in registered.arms} == set(weights), path.name
            for arm in registered.arms:
                assert arm.share == pytest.approx(weights[arm.name] / total), (path.name, arm.name)
            checked += 1
    assert checked >= 1


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "experiments: [{id: x, title: t, start_date: 2026-01-01, arms: [{name: a, share: 1.0}]}]",
            "one control",
        ),
        (
            "experiments: [{id: x, title: t, start_date: 2026-01-01, arms: [{name: a, share: 0.5, is_control: true}, {name: b, share: 0.2}]}]",
            "add up to 1",
        ),
        (
            "experiments: [{id: 'x;drop', title: t, start_date: 2026-01-01, arms: []}]",
            "invalid experiment id",
        ),
        ("experiments: [unclosed", "not valid YAML"),
        (  # the same id twice: two controls, shares adding up to 2 for one experiment
            "experiments: [{id: fhol, title: t, start_date: 2026-01-01, arms: [{name: a, share: 1.0, is_control: true}]},"
            " {id: fhol, title: u, start_date: 2026-01-01, arms: [{name: b, share: 1.0, is_control: true}]}]",
            "experiment id fhol appears more than once",
        ),
    ],
)
def test_bad_registry_is_a_one_line_error(tmp_path: Path, body: str, message: str):
    path = tmp_path / "experiments.yml"
    path.write_text(body)
    with pytest.raises(ConfigError, match=message) as err:
        load_registry(path)
    assert "\n" not in str(err.value)


ARMS = "arms: [{name: a, share: 0.5, is_control: true}, {name: b, share: 0.5}]"


def _one(extra: str, exp_id: str = "x") -> str:
    return f"experiments: [{{id: {exp_id}, title: t, start_date: 2026-01-01, {ARMS}{extra}}}]"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (_one(", end_dat: 2026-02-01"), "end_dat: Extra inputs are not permitted"),
        (_one(", arms_x: []"), "Extra inputs are not permitted"),
        (_one(", end_date: 2025-12-31"), "ends \\(2025-12-31\\) before it starts"),
        (_one("") .replace("]}]", "]}, {id: X, title: u, start_date: 2026-01-01, " + ARMS + "}]"),
         "experiment ids x and X differ only in case"),
        (_one(", analysis: fixed_horizon"), "fixed-horizon analysis needs planned_days"),
        (_one(", metrics: {guardrails: [{metric: mtbr}]}"), "metrics.success: Field required"),
        (_one(", metrics: {success: [{metric: request_latency}]}"), "minimum_effect"),
        (_one(", metrics: {success: [{metric: request_latncy, minimum_effect: 0.01}]}"),
         "success request_latncy is not in the metric registry"),
        (_one(", metrics: {success: [{metric: request_latency_p, minimum_effect: 0.01}]}"),
         "needs a quantile of \\[0.5, 0.9, 0.95, 0.99\\]"),
        (_one(", metrics: {success: [{metric: request_latency, quantile: 0.5, minimum_effect: 0.01}]}"),
         "a ratio metric has no quantile"),
        (_one(", metrics: {success: [{metric: mtbr, minimum_effect: 0.01}],"
              " guardrails: [{metric: mtbr}]}"), "guardrail mtbr is declared twice"),
        (_one(", metrics: {success: [{metric: mtbr, minimum_effect: 0.01}],"
              " guardrails: [{metric: qlog_srtt_client}]}"),
         "guardrail qlog_srtt_client needs a margin"),
        (_one(", metrics: {success: [{metric: mtbr, minimum_effect: 0.01}],"
              " guardrails: [{metric: search_latency, margin: 0.01, margin_absolute: 2}]}"),
         "both margin and margin_absolute"),
        (_one(", metrics: {success: [{metric: mtbr, minimum_effect: 0.01}],"
              " mechanism: [{metric: hol_blocked_time_per_request, expect: up}]}"),
         "expect: Input should be 'increase' or 'decrease'"),
    ],
)  # fmt: skip
def test_declared_metrics_and_dates_are_checked_in_one_line(tmp_path: Path, body, message):
    test_bad_registry_is_a_one_line_error(tmp_path, body, message)


def test_declared_metrics_reach_the_decision_with_the_metric_registry_defaults():
    from quicexp.metrics import load_metrics
    from stats.settings import DecisionSettings

    registry = load_registry(REPO_ROOT / "registry" / "experiments.yml")
    plans = registry.decision_plans(load_metrics())
    settings = DecisionSettings(experiments=plans)  # the job's hand-over validates
    fhol = settings.experiments["fhol_2026_06"]
    roles = {(r.role, r.metric, r.quantile): r for r in fhol.roles}
    assert roles[("success", "request_latency", None)].minimum_effect == 0.01
    assert roles[("guardrail", "request_latency_p", 0.95)].margin == 0.02  # its own
    assert roles[("guardrail", "mtbr", None)].margin == 0.02  # the metric registry's
    assert roles[("guardrail", "mtbr", None)].better == "increase"
    assert roles[("mechanism", "hol_blocked_time_per_request", None)].better == "increase"


def test_every_registered_experiment_declares_what_it_decides_on():
    registry = load_registry(REPO_ROOT / "registry" / "experiments.yml")
    for experiment in registry.experiments:
        assert experiment.metrics is not None and experiment.metrics.success, experiment.id
