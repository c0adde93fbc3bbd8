"""Scenario files: which experiments run, on which fleet, with which transport per arm.

A scenario is a YAML file in ``simulation/scenarios/`` validated by the pydantic models below.
Each experiment names its arms, their traffic weights and the transport settings each arm changes
(fields an arm does not set keep the scenario's ``transport`` baseline). Several experiments can run
at once; each is randomised independently (see :mod:`simulation.assignment`) and a client's
effective transport is the baseline overridden by the arms it is in, in experiment order.

Bad YAML is reported as a one-line :class:`ScenarioError` naming the file and the field.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

SCENARIO_DIR = Path(__file__).parent / "scenarios"
APPS = ("browser", "search", "video")


class ScenarioError(ValueError):
    """A scenario that cannot be loaded; the message is one line."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TransportSettings(_Strict):
    """Transport behaviour of a client (the baseline, or an arm after overrides)."""

    stream_mode: Literal["multistream", "single_stream"] = "multistream"
    header_compression: Literal["hpack", "qpack", "qcram"] = "qpack"
    initial_window: int = Field(32, ge=1, le=100)
    congestion_control: Literal["cubic", "reno"] = "cubic"
    pacing: bool = True
    tail_loss_probes: int = Field(2, ge=0, le=2)
    zero_rtt: bool = True
    connection_pooling: bool = True
    emulated_connections: int = Field(2, ge=1, le=2)
    prioritization: Literal["sequential", "round_robin"] = "sequential"
    multipath: Literal["off", "min_rtt", "reinjection", "qoe_reinjection"] = "off"


class TransportOverrides(_Strict):
    """The transport fields an arm changes; unset fields keep the baseline."""

    stream_mode: Literal["multistream", "single_stream"] | None = None
    header_compression: Literal["hpack", "qpack", "qcram"] | None = None
    initial_window: int | None = Field(None, ge=1, le=100)
    congestion_control: Literal["cubic", "reno"] | None = None
    pacing: bool | None = None
    tail_loss_probes: int | None = Field(None, ge=0, le=2)
    zero_rtt: bool | None = None
    connection_pooling: bool | None = None
    emulated_connections: int | None = Field(None, ge=1, le=2)
    prioritization: Literal["sequential", "round_robin"] | None = None
    multipath: Literal["off", "min_rtt", "reinjection", "qoe_reinjection"] | None = None

    def apply(self, base: TransportSettings) -> TransportSettings:
        return base.model_copy(update=self.model_dump(exclude_none=True))


ID_PATTERN = r"^[A-Za-z0-9_.:-]+$"  # ids and arm names land unescaped in JSON and paths


class Arm(_Strict):
    name: str = Field(min_length=1, max_length=64, pattern=ID_PATTERN)
    weight: float = Field(1.0, gt=0)
    transport: TransportOverrides = TransportOverrides()


class ExperimentFaults(_Strict):
    """Broken experiment data on purpose, so the health checks are tested where they must fire
    (docs/stats.md, "Health checks"; :mod:`simulation.faults`). Shares are of the faulty arm's
    enrolled clients (``arm``; default: the experiment's second arm, its first treatment); a
    client's network is worse the higher its base RTT times (1 + 100 x its loss rate)."""

    arm: str | None = None
    dropped_uploads: float = Field(
        0.0, ge=0, le=1, description="share of the arm's clients none of whose uploads arrive once enrolled (sample ratio mismatch)"
    )
    arm_switches: float = Field(
        0.0, ge=0, le=1, description="share of the enrolled clients reported in the next arm from the experiment's second day (crossover)"
    )
    missing_telemetry: float = Field(
        0.0, ge=0, le=1,
        description="share of the arm's clients, its worst networks, whose events of missing_kinds stop arriving once enrolled while their other events still do (differential missingness)",
    )  # fmt: skip
    missing_kinds: tuple[str, ...] = ("http_transactions", "video_playbacks")
    assignment_bias: float = Field(
        0.0, ge=0, le=1,
        description="share of the arm's clients, its best networks, swapped with as many of the other arms' worst-network clients: the arms differ before the experiment, at the configured split (pre-period imbalance)",
    )  # fmt: skip

    @field_validator("missing_kinds")
    @classmethod
    def _kinds(cls, kinds: tuple[str, ...]) -> tuple[str, ...]:
        from quicexp.telemetry import EVENT_KINDS

        unknown = [k for k in kinds if k not in EVENT_KINDS]
        if unknown:
            raise ValueError(f"unknown event kind {unknown[0]!r}; the kinds are {', '.join(EVENT_KINDS)}")
        return kinds


class Experiment(_Strict):
    id: str = Field(min_length=1, max_length=128, pattern=ID_PATTERN)
    salt: str = ""
    enrolled_fraction: float = Field(1.0, gt=0, le=1)
    start_day: int = Field(0, ge=0, description="days after the scenario start before enrolment (pre-period)")
    arms: list[Arm] = Field(min_length=2)
    faults: ExperimentFaults = ExperimentFaults()

    @field_validator("arms")
    @classmethod
    def _unique_arms(cls, arms: list[Arm]) -> list[Arm]:
        names = [a.name for a in arms]
        if len(set(names)) != len(names):
            raise ValueError(f"arm names must be unique, got {names}")
        return arms

    @model_validator(mode="after")
    def _fault_arm(self) -> Experiment:
        if self.faults.arm is not None and self.faults.arm not in [a.name for a in self.arms]:
            raise ValueError(f"faults.arm {self.faults.arm!r} is not an arm of experiment {self.id}")
        return self

    @property
    def fault_arm(self) -> int:
        """Index of the arm the experiment's faults hit."""
        names = [a.name for a in self.arms]
        return names.index(self.faults.arm) if self.faults.arm is not None else 1


class Population(_Strict):
    clients: int = Field(20_000, ge=1, le=200_000_000)
    platform_shares: dict[Literal["Windows", "Android", "macOS", "iOS", "Linux"], float] | None = None
    network_shares: dict[Literal["ethernet", "wifi", "cellular"], float] | None = Field(
        None, description="P(network type), replacing the per-platform defaults"
    )
    sessions_per_day: float = Field(1.5, gt=0, le=100, description="median sessions per client-day")
    rtt_factor: float = Field(1.0, gt=0, description="scales every client's base RTT")
    bandwidth_factor: float = Field(1.0, gt=0, description="scales every client's bandwidth")
    loss_factor: float = Field(1.0, gt=0, description="scales every client's loss rate")


class HttpWorkload(_Strict):
    transactions_per_session: float = Field(12.0, gt=0)


class SearchWorkload(_Strict):
    queries_per_session: float = Field(4.0, gt=0)


class PageWorkload(_Strict):
    pages_per_session: float = Field(0.0, ge=0, description="page loads per browser session (simulation.apps.pages)")


class VideoWorkload(_Strict):
    playbacks_per_session: float = Field(1.5, gt=0)
    chunk_seconds: float = Field(4.0, gt=0)
    max_chunks: int = Field(60, ge=2, le=400)
    watch_median_seconds: float = Field(150.0, gt=0)
    fixed_chunk_bytes: int | None = Field(None, ge=10_000, description="short-video style fixed-size chunks")
    two_paths: bool = Field(False, description="devices have a second access network (multipath)")
    connection_per_chunk: bool = Field(False, description="report one connections event per chunk request")


class Workloads(_Strict):
    http: HttpWorkload = HttpWorkload()
    search: SearchWorkload = SearchWorkload()
    page: PageWorkload = PageWorkload()
    video: VideoWorkload = VideoWorkload()
    header_compression: bool = False


class Faults(_Strict):
    """Rates of deliberately bad input, as fractions of emitted events."""

    malformed_lines: float = Field(0.0, ge=0, le=0.5)
    schema_violations: float = Field(0.0, ge=0, le=0.5)
    duplicates: float = Field(0.0, ge=0, le=0.5)
    late_uploads: float = Field(0.0, ge=0, le=0.5)
    clock_skew: float = Field(0.0, ge=0, le=0.5)


class Scenario(_Strict):
    name: str = Field(pattern=r"^[a-z0-9_]+$")
    seed_experiment: str | None = Field(None, description="seed file the scenario reproduces")
    description: str = ""
    seed: int = Field(1, ge=0)
    start_date: dt.date = dt.date(2026, 6, 15)
    days: int = Field(1, ge=1, le=366)
    population: Population = Population()
    apps: dict[Literal["browser", "search", "video"], float] = Field(
        default_factory=lambda: {"browser": 0.6, "search": 0.25, "video": 0.15}
    )
    transport: TransportSettings = TransportSettings()
    experiments: list[Experiment] = Field(min_length=1)
    workloads: Workloads = Workloads()
    faults: Faults = Faults()

    @model_validator(mode="after")
    def _check(self) -> Scenario:
        ids = [e.id for e in self.experiments]
        if len(set(ids)) != len(ids):
            raise ValueError(f"experiment ids must be unique, got {ids}")
        if not self.apps or sum(self.apps.values()) <= 0 or min(self.apps.values()) < 0:
            raise ValueError("apps must give non-negative shares with a positive sum")
        return self

    def with_overrides(
        self,
        *,
        days: int | None = None,
        clients: int | None = None,
        seed: int | None = None,
        start_date: dt.date | str | None = None,
    ) -> Scenario:
        """A copy with run-time overrides (validated like the YAML)."""
        data = self.model_dump()
        if days is not None:
            data["days"] = days
        if seed is not None:
            data["seed"] = seed
        if start_date is not None:
            data["start_date"] = start_date
        if clients is not None:
            data["population"]["clients"] = clients
        return validate_scenario(data, source=f"scenario {self.name}")


def _one_line(err: ValidationError) -> str:
    first = err.errors()[0]
    loc = ".".join(str(p) for p in first["loc"]) or "<root>"
    more = f" (+{err.error_count() - 1} more)" if err.error_count() > 1 else ""
    return f"{loc}: {first['msg']}{more}"


def validate_scenario(data: object, *, source: str = "scenario") -> Scenario:
    """Validate a parsed YAML document; raises a one-line :class:`ScenarioError`."""
    if not isinstance(data, dict):
        raise ScenarioError(f"{source}: expected a mapping at the top level")
    try:
        return Scenario.model_validate(data)
    except ValidationError as err:
        raise ScenarioError(f"{source}: {_one_line(err)}") from None


def scenario_path(name_or_path: str | Path) -> Path:
    """Resolve a scenario name (``fhol``) or a path to a YAML file."""
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") or p.exists():
        if not p.exists():
            raise ScenarioError(f"scenario file not found: {p}")
        return p
    candidate = SCENARIO_DIR / f"{name_or_path}.yaml"
    if not candidate.exists():
        raise ScenarioError(f"unknown scenario {str(name_or_path)!r}; known: {', '.join(list_scenarios())}")
    return candidate


def list_scenarios() -> list[str]:
    """Names of the bundled scenarios."""
    return sorted(p.stem for p in SCENARIO_DIR.glob("*.yaml"))


def load_scenario(name_or_path: str | Path | Scenario) -> Scenario:
    """Load and validate a scenario by bundled name or path (a Scenario passes through)."""
    if isinstance(name_or_path, Scenario):
        return name_or_path
    path = scenario_path(name_or_path)
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(err, "problem", None) or type(err).__name__
        raise ScenarioError(f"{path.name}:{where} invalid YAML: {problem}") from None
    return validate_scenario(data, source=path.name)
