"""Write Airflow's simple auth manager passwords file from a secret file (docker-compose.yml).

    python deploy/airflow_passwords.py PASSWORDS_FILE USER SECRET_FILE

Airflow's API server generates a password for every configured user missing from that file and
prints it to its log. Writing the user's password (from the ``airflow_admin_password`` secret)
into the file first, mode 0600, means nothing is generated and nothing printed. Other users'
entries are kept. Runs in the Airflow environment; stdlib only.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: airflow_passwords.py PASSWORDS_FILE USER SECRET_FILE", file=sys.stderr)
        return 2
    target, user, secret = Path(argv[0]), argv[1], Path(argv[2])
    password = secret.read_text().strip()
    if not password:
        print(f"airflow_passwords: {secret} is empty", file=sys.stderr)
        return 2
    passwords = json.loads(target.read_text() or "{}") if target.exists() else {}
    passwords[user] = password
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.part")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(json.dumps(passwords) + "\n")
    partial.replace(target)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
