"""The errors a quicexp user can see, by kind, each with its exit code.

Every error the command line reports in one line is a :class:`QuicexpError`. The kind tells a
scheduler (Airflow, cron) what went wrong without parsing the message; the console entry point
(``quicexp.app.cli.main``) maps each kind to its exit code through :data:`EXIT_CODES` and
prints ``quicexp: <kind>: <message>`` on stderr. README.md documents the table.

| kind | exit | meaning |
|---|---|---|
| ``usage`` | 2 | a bad argument, option, setting or registry entry: fix the call or the config |
| ``input`` | 3 | the data given cannot be used (missing or unreadable file, missing column or table) |
| ``data-quality`` | 4 | a data test failed: the day's numbers are not to be trusted |
| ``unavailable`` | 5 | a service, a tool or a download is not there or did not start in time |
| ``partial`` | 6 | some of the requested outputs were written, the others failed (named) |
| ``resources`` | 7 | Spark ran out of memory for the work given: raise its settings, then run again |

Anything else is a bug: exit 1 with the error's type and first line (the traceback goes to the
log file, never to the console).
"""

from __future__ import annotations

from typing import ClassVar


class QuicexpError(Exception):
    """Base of the errors reported to users as one line."""

    kind: ClassVar[str] = "error"
    exit_code: ClassVar[int] = 1


class ConfigError(QuicexpError, ValueError):
    """A bad argument, setting, config file or registry entry."""

    kind = "usage"
    exit_code = 2


class InputDataError(QuicexpError):
    """Input data that cannot be used: a missing or unreadable file, column or table."""

    kind = "input"
    exit_code = 3


class DataQualityError(QuicexpError):
    """A data quality check (dbt data test, accounting identity) failed."""

    kind = "data-quality"
    exit_code = 4


class ServiceUnavailable(QuicexpError):
    """A service, a tool or a download is missing or did not answer in time."""

    kind = "unavailable"
    exit_code = 5


class PartialFailure(QuicexpError):
    """Some of the requested outputs were written; the failed ones are named."""

    kind = "partial"
    exit_code = 6


class ResourceExhausted(QuicexpError):
    """Spark ran out of memory for the work it was given (the settings, not the data, must change)."""

    kind = "resources"
    exit_code = 7


#: kind -> exit code, the table README.md shows (1 is reserved for unexpected errors: bugs).
EXIT_CODES: dict[str, int] = {
    cls.kind: cls.exit_code
    for cls in (ConfigError, InputDataError, DataQualityError, ServiceUnavailable, PartialFailure, ResourceExhausted)
}
