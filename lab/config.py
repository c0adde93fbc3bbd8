"""The lab's YAML file: arms (stack configurations) and a grid of network conditions.

```yaml
experiment_id: lab_cc_2026_11
arms:                       # weights default to 1 (equal split by the project's hashing)
  - {name: cubic, stack: ngtcp2, cc: cubic}
  - {name: bbr, stack: ngtcp2, cc: bbr}
grid:                       # every combination is one network condition
  rtt_ms: [20, 80]
  loss: [0.0, 0.02]         # per-datagram loss rate, each direction
  burst: [1]                # mean loss-burst length (1 = independent)
  bandwidth_mbps: [20]      # null: no rate limit
queue_ms: 50                # queue of the rate limiter, in ms at the link rate
clients_per_condition: 8
transfer_bytes: 200000
requests: 1                 # GETs per connection
attempts: 3                 # runs per client at most: a run the host dropped datagrams in is invalid
socket_buffer_bytes: 4194304  # buffers asked for on the lab's sockets (0: the system's default)
```
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from quicexp.config import ConfigError

CCS = {"ngtcp2": ("cubic", "reno", "bbr", "bbr2"), "aioquic": ("reno", "cubic")}


class Arm(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,40}$")
    stack: Literal["ngtcp2", "aioquic"]
    cc: str | None = None
    weight: float = Field(default=1.0, gt=0)

    @model_validator(mode="after")
    def _cc_known(self) -> Arm:
        if self.cc is not None and self.cc not in CCS[self.stack]:
            raise ValueError(f"arm {self.name}: {self.stack} has no congestion control {self.cc!r} "
                             f"(known: {', '.join(CCS[self.stack])})")
        return self

    @property
    def congestion_control(self) -> str:
        return self.cc or CCS[self.stack][0]


class Condition(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    rtt_ms: float = Field(ge=0, le=2000)
    loss: float = Field(default=0.0, ge=0, lt=0.5)
    burst: float = Field(default=1.0, ge=1, le=100)
    bandwidth_mbps: float | None = Field(default=None, gt=0, le=10_000)

    @property
    def name(self) -> str:
        bw = f"{self.bandwidth_mbps:g}mbps" if self.bandwidth_mbps else "unlimited"
        return f"rtt{self.rtt_ms:g}ms_loss{self.loss * 100:g}pct_burst{self.burst:g}_{bw}"

    def labels(self) -> dict[str, str]:
        """Each grid value as a segment label: rtt ``30ms``, loss ``2%``, burst ``4``, bandwidth ``20Mbps``
        or ``unlimited`` (labels sort by their first number, as the report orders buckets)."""
        return {"rtt": f"{self.rtt_ms:g}ms", "loss": f"{self.loss * 100:g}%", "burst": f"{self.burst:g}",
                "bandwidth": f"{self.bandwidth_mbps:g}Mbps" if self.bandwidth_mbps else "unlimited"}


class Grid(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    rtt_ms: list[float] = Field(min_length=1)
    loss: list[float] = Field(default=[0.0], min_length=1)
    burst: list[float] = Field(default=[1.0], min_length=1)
    bandwidth_mbps: list[float | None] = Field(default=[None], min_length=1)


class LabConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    experiment_id: str = Field(pattern=r"^[a-z][a-z0-9_]{0,60}$")
    salt: str = ""
    arms: list[Arm] = Field(min_length=1)
    grid: Grid
    queue_ms: float = Field(default=50.0, gt=0, le=5000)
    clients_per_condition: int = Field(default=8, ge=1, le=10_000)
    transfer_bytes: int = Field(default=200_000, ge=1, le=1 << 30)
    requests: int = Field(default=1, ge=1, le=100)
    timeout_s: float = Field(default=30.0, gt=0, le=600)
    #: runs per client at most: a run during which the host dropped UDP datagrams is invalid
    #: (excluded from results) and the client runs again, up to this many times in all
    attempts: int = Field(default=3, ge=1, le=10)
    #: receive and send buffer asked for on every socket of the lab (relay, aioquic, ngtcp2's);
    #: 0 leaves the system's default (net.core.rmem_default): more runs lose datagrams on the host
    socket_buffer_bytes: int = Field(default=4 << 20, ge=0, le=1 << 30)
    seed: int = 0
    platform: str = "Linux"
    network_type: str = "ethernet"

    @field_validator("arms")
    @classmethod
    def _unique(cls, arms: list[Arm]) -> list[Arm]:
        names = [a.name for a in arms]
        if len(set(names)) != len(names):
            raise ValueError("arm names must be unique")
        return arms

    @property
    def segment_dimensions(self) -> list[str]:
        """The grid values that become segments of their own (besides the condition): those that
        vary, when two or more do. One varying value is the condition itself; a value every
        condition shares is every unit's, the same rows as 'overall'."""
        g = self.grid
        varying = [name for name, values in (("rtt", g.rtt_ms), ("loss", g.loss), ("burst", g.burst),
                                             ("bandwidth", g.bandwidth_mbps)) if len(set(values)) > 1]
        return varying if len(varying) > 1 else []

    @property
    def conditions(self) -> list[Condition]:
        g = self.grid
        return [Condition(rtt_ms=r, loss=lo, burst=b, bandwidth_mbps=bw)
                for r, lo, b, bw in itertools.product(g.rtt_ms, g.loss, g.burst, g.bandwidth_mbps)]


def load_config(path: str | Path) -> LabConfig:
    """Read and validate the lab file; any problem is one :class:`ConfigError` line."""
    try:
        raw = yaml.safe_load(Path(path).read_text())
    except OSError as exc:
        raise ConfigError(f"cannot read lab config {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"lab config {path} is not YAML: {str(exc).splitlines()[0]}") from None
    return parse_config(raw, str(path))


def parse_config(raw: object, where: str = "lab config") -> LabConfig:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected a mapping at the top level")
    try:
        return LabConfig.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"{where}: {loc}: {first['msg']}") from None
