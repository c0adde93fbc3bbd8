"""The metric registry (registry/metrics.yml) as a typed model: one entry per metric.

The file is found through ``Settings.metrics_file`` (QUICEXP_METRICS_FILE); a missing or invalid
file is a one-line ``ConfigError``, never an empty registry. dbt reads the same file: ``quicexp
dbt`` passes it, validated and as data (:func:`registry_document`), as the var
``metric_registry`` (macros/metric_registry.sql), and the Jinja checks of macros/metrics.sql and
macros/metric_registry_checks.sql validate it again; this model accepts and rejects the same
entries (tests/test_metric_registry.py runs both on the same variants). The registry is trusted
code reviewed like SQL; the checks keep its text fields plain text and its filters inside a small
grammar (columns, literals, comparisons, and/or/not) defined once, in
macros/metric_registry_checks.sql, and read here.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Literal, get_args

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    ValidationError,
    field_validator,
    model_validator,
)

from quicexp.config import REPO_ROOT, ConfigError

#: segment types every unit has; macros/segments.sql segment_types() (plus the combinations)
BASE_SEGMENT_TYPES = (
    "overall",
    "platform",
    "network_type",
    "rtt_bucket",
    "loss_bucket",
    "bandwidth_bucket",
)
DEFAULT_QUANTILES = (0.5, 0.9, 0.95, 0.99)

Kind = Literal["mean", "proportion", "ratio", "quantile"]
Source = Literal[
    "http_transactions",
    "search_queries",
    "page_loads",
    "video_playbacks",
    "connections",
    "multipath_paths",
    "header_compression",
    "qlog_connections",
]
#: the report's sections, in reading order
Group = Literal["latency", "video", "transport", "qlog", "other"]
#: the event kinds (bronze tables) a metric can come from; macros/metrics.sql event_sources()
EVENT_SOURCES: tuple[str, ...] = get_args(Source)
GROUPS: tuple[str, ...] = get_args(Group)
NAME_PATTERN = r"^[a-z][a-z0-9_]{0,62}$"
#: a SQL expression may be written as a bare number in YAML (``denominator: 1``)
SqlText = str
#: units of quantities that cannot be negative (durations, sizes, rates, counts, shares): no
#: value, mean or quantile of a metric in one of them is negative (stats.inputs rejects such rows)
NON_NEGATIVE_UNITS = frozenset({"ms", "s", "bytes", "kbit/s", "fraction", "stalls"})
#: text shown to people (description, unit, label): no braces (Jinja), no control characters
NOT_PLAIN = re.compile(r"[{}\x00-\x1f\x7f]")
#: the dbt macro file that defines the filter grammar (macro metric_filter_grammar_yaml)
GRAMMAR_FILE = REPO_ROOT / "macros" / "metric_registry_checks.sql"
_GRAMMAR_MACRO = re.compile(
    r"\{% macro metric_filter_grammar_yaml\(\) -%\}\n(.*?)\{%- endmacro %\}", re.S
)


@lru_cache(maxsize=1)
def filter_grammar() -> dict:
    """The filter grammar of macros/metric_registry_checks.sql (the body of its macro
    ``metric_filter_grammar_yaml``, YAML): tokens, word, keywords, columns per source."""
    try:
        found = _GRAMMAR_MACRO.search(GRAMMAR_FILE.read_text())
    except OSError as exc:
        raise ConfigError(
            f"cannot read the filter grammar {GRAMMAR_FILE}: {exc.strerror}"
        ) from None
    if found is None:
        raise ConfigError(f"{GRAMMAR_FILE} defines no macro metric_filter_grammar_yaml")
    return yaml.safe_load(found.group(1))


def check_filter(text: str, source: str) -> None:
    """Raise ValueError (one line) unless ``text`` follows the filter grammar for ``source``;
    the same procedure as the dbt macro check_metric_filter: the whole text is a sequence of
    the grammar's tokens, every word a keyword or a column, parentheses balanced."""
    grammar = filter_grammar()
    token = "|".join(grammar["tokens"])
    allowed = set(grammar["keywords"]) | set(grammar["columns"][source])
    if not re.fullmatch(rf"\s*(?:(?:{token})\s*)+", text):
        raise ValueError(
            "filter is not a predicate of columns, literals, comparisons and and/or/not"
            f" ({grammar['doc']})"
        )
    depth = 0
    for t in re.findall(token, text):
        if re.fullmatch(grammar["word"], t) and t.lower() not in allowed:
            raise ValueError(f"filter names {t}, neither a column of {source} nor a keyword")
        depth += {"(": 1, ")": -1}.get(t, 0)
        if depth < 0:
            break
    if depth != 0:
        raise ValueError("filter has unbalanced parentheses")


class Metric(BaseModel):
    """One entry of registry/metrics.yml (field meanings: the file's header, docs/metrics.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True, coerce_numbers_to_str=True)

    name: str = Field(pattern=NAME_PATTERN)
    description: str = Field(min_length=1)
    kind: Kind
    source: Source
    numerator: SqlText | None = None
    denominator: SqlText | None = None
    value: SqlText | None = None
    filter: SqlText | None = None
    quantiles: tuple[StrictFloat, ...] = DEFAULT_QUANTILES
    histogram_of: str | None = None
    segments: tuple[str, ...] | None = None
    unit: str = Field(min_length=1)
    direction: Literal["increase", "decrease"]
    guardrail: StrictBool = False
    # default non-inferiority margin when an experiment declares the metric a guardrail
    # (registry/experiments.yml may override it): relative, or in the metric's unit
    margin: StrictFloat | None = Field(default=None, gt=0)
    margin_absolute: StrictFloat | None = Field(default=None, gt=0)
    # display facts (the report, the scorecard)
    label: str = Field(min_length=1)
    group: Group = "other"
    scale: StrictFloat = Field(default=1.0, gt=0)

    @field_validator("description", "unit", "label")
    @classmethod
    def _plain_text(cls, value: str, info) -> str:
        if NOT_PLAIN.search(value):
            raise ValueError(f"{info.field_name} is not plain text (braces or control characters)")
        return value

    @model_validator(mode="after")
    def _kind_needs(self) -> Metric:
        if self.kind == "quantile" and not self.value:
            raise ValueError(f"quantile metric {self.name} needs a value")
        if self.kind != "quantile" and not self.numerator:
            raise ValueError(f"metric {self.name} needs a numerator")
        if self.kind == "ratio" and not self.denominator:
            raise ValueError(f"ratio metric {self.name} needs a denominator")
        if any(not 0 < p < 1 for p in self.quantiles):
            raise ValueError(f"metric {self.name} has a quantile outside (0, 1)")
        if self.margin is not None and self.margin_absolute is not None:
            raise ValueError(f"metric {self.name} has both margin and margin_absolute")
        if self.filter is not None:
            try:
                check_filter(self.filter, self.source)
            except ValueError as exc:
                raise ValueError(f"metric {self.name} {exc}") from None
        return self

    @property
    def higher_is_better(self) -> bool:
        return self.direction == "increase"

    @property
    def non_negative(self) -> bool:
        """Its values cannot be negative: its unit is one of :data:`NON_NEGATIVE_UNITS`."""
        return self.unit in NON_NEGATIVE_UNITS


class MetricRegistry(BaseModel):
    """All metrics, in the file's order (the report's reading order within a group)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    metrics: tuple[Metric, ...] = Field(min_length=1)

    def by_name(self) -> dict[str, Metric]:
        return {m.name: m for m in self.metrics}

    def get(self, name: str) -> Metric | None:
        return self.by_name().get(name)

    @property
    def non_negative_names(self) -> frozenset[str]:
        """The metrics whose values cannot be negative (:attr:`Metric.non_negative`)."""
        return frozenset(m.name for m in self.metrics if m.non_negative)

    @property
    def names(self) -> list[str]:
        return [m.name for m in self.metrics]

    def check(self, segment_types: tuple[str, ...]) -> MetricRegistry:
        """Cross-entry rules: unique names, histogram_of names a metric, known segment types."""
        seen: set[str] = set()
        for m in self.metrics:
            if m.name in seen:
                raise ValueError(f"duplicate metric {m.name}")
            seen.add(m.name)
            unknown = [s for s in m.segments or () if s not in segment_types]
            if unknown:
                raise ValueError(f"metric {m.name} names unknown segment type {unknown[0]}")
        for m in self.metrics:
            if m.histogram_of and m.histogram_of not in seen:
                raise ValueError(f"{m.name} histogram_of names no metric")
        return self


def segment_types(project_file: Path = REPO_ROOT / "dbt_project.yml") -> tuple[str, ...]:
    """The segment types dbt knows: the base ones and var ``segment_combinations`` joined by ×."""
    try:
        project = yaml.safe_load(Path(project_file).read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read the dbt project {project_file}: {exc}") from None
    combos = (project.get("vars") or {}).get("segment_combinations") or []
    return BASE_SEGMENT_TYPES + tuple("×".join(c) for c in combos)


def parse_metrics(text: str, where: str = "registry/metrics.yml",
                  types: tuple[str, ...] | None = None) -> MetricRegistry:  # fmt: skip
    """Validate registry text; raises ConfigError with one line naming the first problem."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(
            f"metric registry {where} is not valid YAML: {str(exc).splitlines()[0]}"
        ) from None
    try:
        registry = MetricRegistry.model_validate(data)
        return registry.check(types if types is not None else segment_types())
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = list(first["loc"])
        if len(loc) >= 2 and loc[0] == "metrics" and isinstance(loc[1], int):
            entries = (data or {}).get("metrics") or []
            entry = entries[loc[1]] if loc[1] < len(entries) else None
            name = entry.get("name") if isinstance(entry, dict) else None
            loc[1] = f"{name}" if name else f"entry {loc[1] + 1}"
        msg = str(first["msg"]).removeprefix("Value error, ")
        raise ConfigError(f"metric registry {where}: {'.'.join(map(str, loc))}: {msg}") from None
    except ValueError as exc:
        raise ConfigError(f"metric registry {where}: {exc}") from None


def load_metrics(path: Path | None = None) -> MetricRegistry:
    """The registry at ``path``; by default the configured one (``Settings.metrics_file``)."""
    if path is None:
        from quicexp.config import load_settings

        path = load_settings().metrics_file
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f"cannot read the metric registry {path}: {exc.strerror}") from None
    return _parse_cached(text, str(path))


def registry_document(path: Path | None = None) -> dict:
    """The registry file as data (its YAML, validated by :func:`load_metrics`): what dbt gets as
    the var ``metric_registry``, so dbt reads the very file Python does. A mapping, not the
    text: dbt renders a var that is a string as a Jinja template, never a mapping's values."""
    if path is None:
        from quicexp.config import load_settings

        path = load_settings().metrics_file
    load_metrics(path)
    return yaml.safe_load(Path(path).read_text())


@lru_cache(maxsize=16)
def _parse_cached(text: str, where: str) -> MetricRegistry:
    """Parsed once per file content (the same registry object while the file is unchanged)."""
    return parse_metrics(text, where)
