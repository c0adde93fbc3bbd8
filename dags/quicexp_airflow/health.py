"""``python -m quicexp_airflow.health URL``: exit 0 when the URL answers 200 (scripts/airflow.sh
waits on the api-server with it), 1 otherwise. Runs in the Airflow environment."""

from __future__ import annotations

import sys
import urllib.error
import urllib.request


def healthy(url: str, timeout: float = 5.0) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


if __name__ == "__main__":
    sys.exit(0 if len(sys.argv) == 2 and healthy(sys.argv[1]) else 1)
