"""The one typed configuration object.

Precedence, highest first: explicit keyword arguments, environment variables
(``QUICEXP_*``; nested fields with ``__``, e.g. ``QUICEXP_SPARK__MASTER``), the
config file named by ``QUICEXP_CONFIG`` (YAML), then the defaults below, which
describe the embedded single-machine mode: Spark local, Delta on local disk and
a Derby network server as the shared Hive metastore.

``SPARK_MASTER`` (the variable Spark itself knows) is honoured as well, so the
same jobs run on a cluster by configuration only.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
from collections.abc import Mapping
from datetime import date
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict
from pydantic_settings.exceptions import SettingsError

from quicexp.errors import ConfigError

__all__ = ["ConfigError", "Settings", "load_settings", "parse_day", "validate_identifier"]

REPO_ROOT = Path(__file__).resolve().parents[1]

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")


def validate_identifier(name: str, what: str = "identifier") -> str:
    """Return ``name`` if it is safe to splice into SQL as a bare identifier."""
    if not isinstance(name, str) or not _IDENTIFIER.match(name):
        raise ConfigError(f"invalid {what} {name!r}: use letters, digits and underscores")
    return name


def validate_loopback(value: str, what: str) -> str:
    """``value`` if it is a loopback *address* (127.0.0.0/8, ::1) or ``localhost``.

    Parsed with :mod:`ipaddress`, not matched as a prefix: ``127.evil.example`` is a host name that
    DNS may point anywhere, so it is refused like ``0.0.0.0``.
    """
    if value == "localhost":
        return value
    try:
        address = ipaddress.ip_address(value)
    except ValueError:
        raise ValueError(f"{what} must be a loopback address (127.0.0.0/8, ::1) or localhost, not {value!r}") from None
    if not address.is_loopback:
        raise ValueError(f"{what} must be a loopback address (127.0.0.0/8, ::1) or localhost, not {value!r}")
    return value


class _Section(BaseModel):
    """A nested settings section: an unknown key (a typo such as ``spark.mastre``) is an error."""

    model_config = ConfigDict(extra="forbid")


#: Spark's memory sizes (JavaUtils.byteStringAs): a whole number and a unit k, m, g, t or p
#: (an optional b), or bytes
_MEMORY_SIZE = re.compile(r"^([0-9]+)([kmgtp]?)b?$", re.IGNORECASE)
#: the smallest driver heap Spark starts with: 1.5 x its reserved 300 MiB (UnifiedMemoryManager
#: refuses less than 450 MiB of JVM heap), rounded up
MIN_DRIVER_MEMORY = 512 * 2**20
#: the master URLs Spark 4 knows (SparkContext.createTaskScheduler): local, local[N], local[*],
#: local[N,F], local-cluster[N,C,M], spark://host:port[,host:port...], yarn, k8s://...
_MASTER = re.compile(
    r"^(local(\[([1-9][0-9]*|\*)(,\s*[0-9]+)?\])?"
    r"|local-cluster\[[1-9][0-9]*,\s*[1-9][0-9]*,\s*[1-9][0-9]*\]"
    r"|spark://[^\s/,:]+:[0-9]{1,5}(,[^\s/,:]+:[0-9]{1,5})*"
    r"|yarn|k8s://\S+)$"
)
#: keys of spark.extra_conf the project sets itself: owned by a setting, or what every session
#: needs to see the lake (Delta's extension and catalog, the shared metastore, the warehouse)
OWNED_SPARK_CONF = {
    "spark.master": "set spark.master",
    "spark.driver.memory": "set spark.driver_memory",
    "spark.authenticate.secret": "set spark.auth_secret_file",
    "spark.sql.extensions": "Delta's session extension, which every table of the lake needs",
    "spark.sql.catalog.spark_catalog": "Delta's catalog, which every table of the lake needs",
    "spark.sql.catalogImplementation": "the shared Hive metastore's",
    "spark.sql.warehouse.dir": "set lake_root",
    "spark.hadoop.javax.jdo.option.ConnectionURL": "set the catalog section",
    "spark.hadoop.javax.jdo.option.ConnectionDriverName": "set the catalog section",
    "spark.hadoop.javax.jdo.option.ConnectionUserName": "set the catalog section",
    "spark.hadoop.javax.jdo.option.ConnectionPassword": "set the catalog section",
}


def memory_bytes(value: str) -> int:
    """Bytes of a Spark memory size (``4g``, ``512m``); ValueError when it is none."""
    match = _MEMORY_SIZE.match(value.strip())
    if not match:
        raise ValueError(f"{value!r} is not a memory size such as 4g or 512m")
    return int(match.group(1)) * 1024 ** "bkmgtp".index(match.group(2).lower() or "b")


class SparkSettings(_Section):
    """Where and how Spark runs."""

    master: str = "local[2]"
    driver_memory: str = "4g"
    shuffle_partitions: int = Field(default=4, ge=1)
    ui_enabled: bool = False
    extra_conf: dict[str, str] = Field(default_factory=dict)
    #: a file holding the shared secret of Spark's RPC authentication (``spark.authenticate``);
    #: set on a cluster (docker-compose.yml gives it as a secret file). Read when the conf is built.
    auth_secret_file: Path | None = None
    #: The driver JVM's JIT compilers. ``quick``: C1 only; ``tiered``: the JVM's default (C1, then
    #: C2 for hot code); ``auto``: ``quick`` when the command's input is known and at most
    #: ``jit_quick_max_bytes``, else ``tiered`` (quicexp.spark.jit_options, docs/decisions.md).
    jit: Literal["auto", "quick", "tiered"] = "auto"
    jit_quick_max_bytes: int = Field(default=16 * 2**20, ge=0)
    #: The garbage collector of every Spark JVM the project starts (drivers, executors, the Thrift
    #: server): ``parallel`` (throughput) or ``g1`` (shorter pauses on large heaps).
    gc: Literal["parallel", "g1"] = "parallel"

    @field_validator("master")
    @classmethod
    def _known_master(cls, value: str) -> str:
        if not _MASTER.match(value):
            raise ValueError(
                f"{value!r} is not a Spark master URL (local, local[N], local[*], "
                "spark://host:port, yarn, k8s://...)"
            )
        return value

    @field_validator("driver_memory")
    @classmethod
    def _memory_size(cls, value: str) -> str:
        if memory_bytes(value) < MIN_DRIVER_MEMORY:
            raise ValueError(f"{value!r} is below the 512m Spark needs to start")
        return value

    @field_validator("extra_conf")
    @classmethod
    def _not_owned(cls, value: dict[str, str]) -> dict[str, str]:
        for key in value:
            if key in OWNED_SPARK_CONF:
                raise ValueError(f"{key} is the project's ({OWNED_SPARK_CONF[key]}); not settable here")
        return value


class CatalogSettings(_Section):
    """The Hive metastore every Spark JVM (jobs, dbt, Thrift server, notebooks) shares.

    ``derby-server``: a Derby network server the project starts on a loopback address (embedded
    default; many JVMs at once), with a generated password (``quicexp.catalog``). ``jdbc``: any metastore database by JDBC URL, e.g.
    PostgreSQL in production. See docs/decisions.md.
    """

    kind: Literal["derby-server", "jdbc"] = "derby-server"
    host: str = "127.0.0.1"
    port: int = Field(default=1527, ge=1, le=65535)
    jdbc_url: str | None = None
    jdbc_driver: str = "org.postgresql.Driver"
    user: str | None = None
    password: str | None = None

    @model_validator(mode="after")
    def _derby_on_loopback(self) -> CatalogSettings:
        if self.kind == "derby-server":
            validate_loopback(self.host, "catalog.host (the Derby metastore server)")
        return self

    def connection_url(self, metastore_dir: Path) -> str:
        if self.kind == "jdbc":
            if not self.jdbc_url:
                raise ConfigError("catalog.kind is 'jdbc' but catalog.jdbc_url is not set")
            return self.jdbc_url
        return f"jdbc:derby://{self.host}:{self.port}/{metastore_dir / 'metastore_db'};create=true"

    def driver_class(self) -> str:
        return "org.apache.derby.jdbc.ClientDriver" if self.kind == "derby-server" else self.jdbc_driver


class ServiceSettings(_Section):
    """Ports of the local services; they bind to a loopback address only."""

    bind_host: str = "127.0.0.1"
    thrift_port: int = Field(default=10000, ge=1, le=65535)
    superset_port: int = Field(default=8088, ge=1, le=65535)
    airflow_port: int = Field(default=8080, ge=1, le=65535)

    @field_validator("bind_host")
    @classmethod
    def _loopback_only(cls, value: str) -> str:
        return validate_loopback(value, "services.bind_host")


class IngestSettings(_Section):
    """Rules of the landing-zone to bronze job (docs/ingestion.md)."""

    lookback_days: int = Field(default=3, ge=0, le=30)
    future_tolerance_minutes: int = Field(default=10, ge=0)


class Settings(BaseSettings):
    """Everything a quicexp process needs to know about its installation."""

    model_config = SettingsConfigDict(
        env_prefix="QUICEXP_", env_nested_delimiter="__", extra="forbid", frozen=True
    )

    home: Path = REPO_ROOT / "var"
    lake_root: Path | None = None
    landing_root: Path | None = None
    reports_dir: Path | None = None
    metastore_dir: Path | None = None
    state_dir: Path = Path.home() / ".config" / "quicexp"
    #: the experiment registry (QUICEXP_REGISTRY_FILE): which experiments run, arms and splits
    registry_file: Path = REPO_ROOT / "registry" / "experiments.yml"
    #: the metric registry (QUICEXP_METRICS_FILE): every metric, its SQL and its display facts
    metrics_file: Path = REPO_ROOT / "registry" / "metrics.yml"
    jar_cache: Path = Path.home() / ".cache" / "quicexp" / "jars"
    bronze_schema: str = "bronze"
    silver_schema: str = "silver"
    gold_schema: str = "gold"
    spark: SparkSettings = Field(default_factory=SparkSettings)
    catalog: CatalogSettings = Field(default_factory=CatalogSettings)
    services: ServiceSettings = Field(default_factory=ServiceSettings)
    ingest: IngestSettings = Field(default_factory=IngestSettings)

    @field_validator(
        "home", "lake_root", "landing_root", "reports_dir", "metastore_dir", "state_dir",
        "registry_file", "jar_cache", mode="before",
    )  # fmt: skip
    @classmethod
    def _no_empty_path(cls, value: Any) -> Any:
        # Path("") is the current directory: an empty QUICEXP_HOME would put the lake wherever
        # the command happens to run.
        if isinstance(value, str) and not value.strip():
            raise ValueError("must not be empty (an empty path would mean the current directory)")
        return value

    @field_validator("bronze_schema", "silver_schema", "gold_schema")
    @classmethod
    def _schema_names(cls, value: str) -> str:
        return validate_identifier(value, "schema name")

    @model_validator(mode="after")
    def _derive_paths(self) -> Settings:
        home = self.home.expanduser().resolve()
        object.__setattr__(self, "home", home)
        derived = (
            ("lake_root", "lake"),
            ("landing_root", "landing"),
            ("reports_dir", "reports"),
            ("metastore_dir", "metastore"),
        )
        for name, sub in derived:
            value = getattr(self, name)
            object.__setattr__(self, name, (value or home / sub).expanduser().resolve())
        return self

    @property
    def warehouse_dir(self) -> Path:
        return self.lake_root / "warehouse"

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, _SparkMasterSource(settings_cls), env_settings, _YamlFileSource(settings_cls))


class _YamlFileSource(PydanticBaseSettingsSource):
    """Reads the YAML file named by ``QUICEXP_CONFIG``."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        path = os.environ.get("QUICEXP_CONFIG")
        if not path:
            return {}
        try:
            data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
        except OSError as exc:
            raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
        except UnicodeDecodeError as exc:
            raise ConfigError(f"config file {path} is not UTF-8 text (bad byte at offset {exc.start})") from None
        except yaml.YAMLError as exc:
            raise ConfigError(f"config file {path} is not valid YAML: {exc}".splitlines()[0]) from None
        if not isinstance(data, dict):
            raise ConfigError(f"config file {path} must hold a mapping at the top level")
        return data


class _SparkMasterSource(PydanticBaseSettingsSource):
    """Honours Spark's own ``SPARK_MASTER`` unless ``QUICEXP_SPARK__MASTER`` is set."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        master = os.environ.get("SPARK_MASTER")
        if master and not os.environ.get("QUICEXP_SPARK__MASTER"):
            return {"spark": {"master": master}}
        return {}


_ENV_PREFIX = "QUICEXP_"
_ENV_NESTED = "__"


def _check_nested_env(environ: Mapping[str, str]) -> None:
    """Refuse a ``QUICEXP_<SECTION>__<KEY>`` variable that names no setting.

    A double underscore always means "a nested setting", so ``QUICEXP_SPARK__MASTRE`` or
    ``QUICEXP_SPRAK__MASTER`` is a typo, never another program's variable. Single-level names
    (``QUICEXP_NOTEBOOK_FIGURES``, ``QUICEXP_NO_JVM``…) share the prefix with variables that are
    not settings, so an unknown one of those is left alone. Values of JSON-typed settings
    (``QUICEXP_SPARK__EXTRA_CONF``) are checked here too, for a one-line error naming the variable.
    """
    sections = {
        name: field.annotation
        for name, field in Settings.model_fields.items()
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)
    }
    for var in sorted(environ):
        if not var.startswith(_ENV_PREFIX) or _ENV_NESTED not in var:
            continue
        section, _, key = var[len(_ENV_PREFIX) :].lower().partition(_ENV_NESTED)
        model = sections.get(section)
        if model is None:
            raise ConfigError(f"unknown setting in the environment: {var} ({section!r} is not a settings section)")
        if key not in model.model_fields:
            known = ", ".join(sorted(model.model_fields))
            raise ConfigError(f"unknown setting in the environment: {var} ({section} has {known})")
        annotation = model.model_fields[key].annotation
        if getattr(annotation, "__origin__", None) is dict:
            try:
                value = json.loads(environ[var])
            except json.JSONDecodeError as exc:
                raise ConfigError(f"{var} is not valid JSON: {exc.msg} at character {exc.pos}") from None
            if not isinstance(value, dict):
                raise ConfigError(f"{var} must be a JSON object of strings, e.g. '{{\"spark.x\": \"1\"}}'")


def load_settings(**overrides: Any) -> Settings:
    """Build the settings, turning validation errors into one-line ``ConfigError``s."""
    _check_nested_env(os.environ)
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "config"
        message = str(first["msg"]).removeprefix("Value error, ")
        if first["type"] == "extra_forbidden":
            message = "unknown setting (a typo?)"
        raise ConfigError(f"bad configuration at {where}: {message}") from None
    except SettingsError as exc:  # a value the environment source cannot parse
        raise ConfigError(f"bad configuration: {str(exc).splitlines()[0]}") from None


def parse_day(value: str | date) -> date:
    """Parse a logical day given as YYYY-MM-DD, and only so: ``date.fromisoformat`` also
    reads ``20260615`` and the ISO week date ``2026-W25-1`` as 2026-06-15."""
    if isinstance(value, date):
        return value
    try:
        if not re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", value):
            raise ValueError(value)
        return date.fromisoformat(value)
    except (TypeError, ValueError):
        raise ConfigError(f"bad day {value!r}: expected YYYY-MM-DD") from None
