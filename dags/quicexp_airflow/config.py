"""Timing knobs of the DAGs, read from the environment when a DAG file is parsed.

Environment variables only (no Airflow Variables: those would query the metadata database at
parse time). Defaults suit production; tests shorten them:

==================================  =======  ==============================================
variable                            default  meaning
==================================  =======  ==============================================
QUICEXP_AIRFLOW_LANDING_TIMEOUT     21600    seconds the sensor waits for a day's landing data
QUICEXP_AIRFLOW_POKE_INTERVAL       300      seconds between two looks at the landing zone
QUICEXP_AIRFLOW_RETRIES             2        retries of every task (the sensor's timeout is final)
QUICEXP_AIRFLOW_RETRY_DELAY         300      seconds before the first retry (then exponential)
QUICEXP_AIRFLOW_SPARK_TIMEOUT       7200     execution timeout of one Spark step, seconds
==================================  =======  ==============================================
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import timedelta


def _seconds(name: str, default: float, minimum: float = 0) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r}: expected a number of seconds") from None
    if value < minimum:
        raise ValueError(f"{name}={raw!r}: must be at least {minimum}")
    return value


@dataclass(frozen=True)
class DagTiming:
    """How long the daily DAG waits, how often it retries, when it gives up."""

    landing_timeout: timedelta
    poke_interval: timedelta
    retries: int
    retry_delay: timedelta
    spark_timeout: timedelta

    @classmethod
    def from_env(cls) -> DagTiming:
        return cls(
            landing_timeout=timedelta(
                seconds=_seconds("QUICEXP_AIRFLOW_LANDING_TIMEOUT", 6 * 3600)
            ),
            poke_interval=timedelta(
                seconds=_seconds("QUICEXP_AIRFLOW_POKE_INTERVAL", 300, minimum=1)
            ),
            retries=int(_seconds("QUICEXP_AIRFLOW_RETRIES", 2, minimum=2)),
            retry_delay=timedelta(seconds=_seconds("QUICEXP_AIRFLOW_RETRY_DELAY", 300)),
            spark_timeout=timedelta(
                seconds=_seconds("QUICEXP_AIRFLOW_SPARK_TIMEOUT", 2 * 3600, minimum=60)
            ),
        )
