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

import os
import re
from datetime import date
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from quicexp.errors import ConfigError

__all__ = ["ConfigError", "Settings", "load_settings", "parse_day", "validate_identifier"]

REPO_ROOT = Path(__file__).resolve().parents[1]

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")


def validate_identifier(name: str, what: str = "identifier") -> str:
    """Return ``name`` if it is safe to splice into SQL as a bare identifier."""
    if not isinstance(name, str) or not _IDENTIFIER.match(name):
        raise ConfigError(f"invalid {what} {name!r}: use letters, digits and underscores")
    return name


class SparkSettings(BaseModel):
    """Where and how Spark runs."""

    master: str = "local[2]"
    driver_memory: str = "4g"
    shuffle_partitions: int = Field(default=4, ge=1)
    ui_enabled: bool = False
    extra_conf: dict[str, str] = Field(default_factory=dict)


class CatalogSettings(BaseModel):
    """The Hive metastore every Spark JVM (jobs, dbt, Thrift server, notebooks) shares.

    ``derby-server``: a Derby network server the project starts on 127.0.0.1 (embedded
    default; many JVMs at once). ``jdbc``: any metastore database by JDBC URL, e.g.
    PostgreSQL in production. See docs/decisions.md.
    """

    kind: Literal["derby-server", "jdbc"] = "derby-server"
    host: str = "127.0.0.1"
    port: int = Field(default=1527, ge=1, le=65535)
    jdbc_url: str | None = None
    jdbc_driver: str = "org.postgresql.Driver"
    user: str | None = None
    password: str | None = None

    def connection_url(self, metastore_dir: Path) -> str:
        if self.kind == "jdbc":
            if not self.jdbc_url:
                raise ConfigError("catalog.kind is 'jdbc' but catalog.jdbc_url is not set")
            return self.jdbc_url
        return f"jdbc:derby://{self.host}:{self.port}/{metastore_dir / 'metastore_db'};create=true"

    def driver_class(self) -> str:
        return "org.apache.derby.jdbc.ClientDriver" if self.kind == "derby-server" else self.jdbc_driver


class ServiceSettings(BaseModel):
    """Ports of the local services; they bind to 127.0.0.1 only."""

    bind_host: str = "127.0.0.1"
    thrift_port: int = Field(default=10000, ge=1, le=65535)
    superset_port: int = Field(default=8088, ge=1, le=65535)
    airflow_port: int = Field(default=8080, ge=1, le=65535)

    @field_validator("bind_host")
    @classmethod
    def _loopback_only(cls, value: str) -> str:
        if not value.startswith("127.") and value != "localhost":
            raise ValueError("services bind to the loopback interface only (127.0.0.0/8)")
        return value


class IngestSettings(BaseModel):
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
            data = yaml.safe_load(Path(path).read_text()) or {}
        except OSError as exc:
            raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
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


def load_settings(**overrides: Any) -> Settings:
    """Build the settings, turning validation errors into one-line ``ConfigError``s."""
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "config"
        raise ConfigError(f"bad configuration at {where}: {first['msg']}") from None


def parse_day(value: str | date) -> date:
    """Parse a logical day given as YYYY-MM-DD."""
    if isinstance(value, date):
        return value
    try:
        return date.fromisoformat(value)
    except (TypeError, ValueError):
        raise ConfigError(f"bad day {value!r}: expected YYYY-MM-DD") from None
