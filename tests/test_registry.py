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
