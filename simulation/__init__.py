"""The seeded, mechanistic QUIC fleet simulator (the statistics validation study is stats.study).

``simulation.run_scenario`` runs a scenario into a landing zone (see ``docs/simulator.md``); it is
imported lazily so that importing a submodule stays light.
"""

from __future__ import annotations

from typing import Any

__all__ = ["run_scenario"]


def __getattr__(name: str) -> Any:
    if name == "run_scenario":
        from simulation.runner import run_scenario

        return run_scenario
    raise AttributeError(f"module 'simulation' has no attribute {name!r}")
