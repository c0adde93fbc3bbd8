"""The Spark Thrift Server: Delta tables through JDBC/ODBC, live new days, consistent snapshots,
and a listener on 127.0.0.1 only."""

from __future__ import annotations

import ipaddress
import json
import socket
import subprocess
import threading

import pytest

from quicexp.app.serve import (
    DEFAULT_LOGINS,
    THRIFT_CLASS,
    ThriftPaths,
    thrift_command,
    thrift_login,
    thrift_status,
)


def test_command_passes_jars_both_ways_and_binds_loopback(serving):
    cmd, hidden = thrift_command(serving.settings)
    # the embedded Derby metastore's generated password goes to the 0600 properties file
    assert set(hidden) == {"spark.hadoop.javax.jdo.option.ConnectionPassword"}
    assert "--properties-file" in cmd and hidden[next(iter(hidden))] not in " ".join(cmd)
    joined = " ".join(cmd)
    assert THRIFT_CLASS in cmd and "spark-internal" in cmd
    jars = cmd[cmd.index("--jars") + 1].split(",")
    assert any("delta-spark" in j for j in jars)
    assert any(a.startswith("spark.driver.extraClassPath=") and "delta-spark" in a for a in cmd)
    assert "--packages" not in cmd
    assert f"hive.server2.thrift.bind.host={serving.settings.services.bind_host}" in joined
    assert serving.settings.services.bind_host == "127.0.0.1"


def test_metastore_password_stays_off_the_command_line(serving):
    settings = serving.settings.model_copy(
        update={"catalog": serving.settings.catalog.model_copy(
            update={"kind": "jdbc", "jdbc_url": "jdbc:postgresql://127.0.0.1/metastore", "password": "s3cret-pw"}
        )}
    )  # fmt: skip
    cmd, hidden = thrift_command(settings)
    assert "s3cret-pw" not in " ".join(cmd)
    assert hidden == {"spark.hadoop.javax.jdo.option.ConnectionPassword": "s3cret-pw"}
    assert cmd[cmd.index("--properties-file") + 1].endswith("thrift-secrets.properties")


def test_delta_marts_are_queryable_through_thrift(serving, thrift_cursor):
    gold = serving.settings.gold_schema
    cur = thrift_cursor()
    cur.execute(f"select count(*), count(distinct metric) from {gold}.experiment_results")
    rows, metrics = cur.fetchone()
    assert rows > 0 and metrics >= 2
    cur.execute(f"describe detail {gold}.experiment_results")
    detail = dict(zip([d[0] for d in cur.description], cur.fetchone(), strict=True))
    assert detail["format"] == "delta"


def _snapshot(cur, table: str) -> tuple[int, int]:
    cur.execute(f"select count(*), coalesce(sum(crc32(event_id)), 0) from {table}")
    count, checksum = cur.fetchone()
    return int(count), int(checksum)


def test_query_during_ingest_sees_old_or_new_snapshot_never_partial(spark, serving, thrift_cursor):
    """Ingest the next upload day (one Delta commit per table) while querying through Thrift."""
    import jobs.ingest

    settings = serving.settings
    table = f"{settings.bronze_schema}.http_transactions"
    cur = thrift_cursor()
    old = _snapshot(cur, table)
    done = threading.Event()
    errors: list[BaseException] = []

    def ingest() -> None:
        try:
            jobs.ingest.run(spark, settings, serving.next_day, ("http_transactions",))
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            done.set()

    worker = threading.Thread(target=ingest, name="ingest-next-day")
    worker.start()
    seen: list[tuple[int, int]] = []
    while not done.is_set():
        seen.append(_snapshot(cur, table))
    worker.join()
    assert not errors, errors
    new = _snapshot(cur, table)
    seen.append(new)
    print(f"\n[serving] {len(seen)} thrift snapshots during ingest; old {old}, new {new}")
    assert new[0] > old[0], "the new upload day must add rows (and be visible without a restart)"
    assert len(seen) >= 2
    assert set(seen) <= {old, new}, f"partial snapshot seen: {set(seen) - {old, new}}"


def _machine_addresses() -> list[str]:
    out = subprocess.run(["ip", "-j", "addr"], capture_output=True, text=True, check=True).stdout
    addresses = []
    for link in json.loads(out):
        for info in link.get("addr_info", []):
            addr = ipaddress.ip_address(info["local"])
            if addr.is_loopback or (addr.is_link_local and addr.version == 6):
                continue
            addresses.append(str(addr))
    return addresses


def test_thrift_port_reachable_on_loopback_only(serving, thrift):
    host, port = thrift
    with socket.create_connection((host, port), timeout=5):
        pass
    addresses = _machine_addresses()
    assert addresses, "this machine should have at least one non-loopback address"
    for address in addresses:
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.settimeout(3)
            assert sock.connect_ex((address, port)) != 0, f"thrift port {port} answers on {address}"
    # and the listening socket itself is bound to 127.0.0.1, not a wildcard
    listeners = subprocess.run(
        ["ss", "-Hltn", f"sport = :{port}"], capture_output=True, text=True
    ).stdout
    local = {line.split()[3] for line in listeners.splitlines() if line.strip()}
    # (Java listens on an IPv6 socket bound to the IPv4-mapped loopback address)
    assert local and local <= {f"127.0.0.1:{port}", f"[::ffff:127.0.0.1]:{port}"}, local


def test_status_reports_running(serving, thrift):
    assert "running" in thrift_status(serving.settings)


# --- who may connect (issue 19, item 1; issue 40, item 3) ----------------------------------------

#: (payload, what the refusal names): a process and JVM methods. Superset's SQL Lab sends them too
#: (tests/serving/test_superset.py); the whole allow-list is tests/serving/test_thrift_guard.py.
PAYLOADS = [
    ("SELECT TRANSFORM('x') USING 'id'", "script transformation"),
    ("SELECT TRANSFORM(1, 2) USING 'cat' AS (a, b)", "script transformation"),
    ("SELECT reflect('java.lang.System', 'getProperty', 'user.name')", "reflect()"),
    ("SELECT java_method('java.lang.Math', 'abs', -1)", "java_method()"),
    ("SELECT try_reflect('java.lang.Math', 'abs', -1)", "try_reflect()"),
]


def test_logins_are_generated_private_and_outside_the_repo(serving, thrift):
    import stat

    from quicexp.config import REPO_ROOT

    paths = ThriftPaths.of(serving.settings)
    server_file = paths.logins.read_text()
    log = paths.log_file.read_text(errors="replace")
    processes = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    for name in DEFAULT_LOGINS:
        path = paths.login_file(name)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert REPO_ROOT not in path.resolve().parents
        user, password = thrift_login(serving.settings, name, create=False)
        assert user == name and len(password) >= 24
        assert f"login.{name}.pbkdf2=sha256:" in server_file and password not in server_file
        assert password not in log, "the password must not reach the server's log"
        assert password not in processes, "nor a command line"
    assert stat.S_IMODE(paths.logins.stat().st_mode) == 0o600


def test_a_connection_without_a_login_is_refused(serving, thrift, thrift_cursor):
    from pyhive import hive
    from thrift.transport.TTransport import TTransportException

    host, port = thrift
    analyst = thrift_login(serving.settings, "analyst", create=False)
    superset = thrift_login(serving.settings, "superset", create=False)
    attempts = {
        "no password (NONE auth, any user name)": dict(username="analyst"),
        "wrong password": dict(username=analyst[0], password=analyst[1] + "x", auth="CUSTOM"),
        "another login's password": dict(username=analyst[0], password=superset[1], auth="CUSTOM"),
        "unknown user": dict(username="admin", password=analyst[1], auth="CUSTOM"),
        "empty password": dict(username=analyst[0], password="", auth="CUSTOM"),
    }
    for what, kwargs in attempts.items():
        with pytest.raises(TTransportException, match="Error validating the login"):
            hive.connect(host=host, port=port, **kwargs).cursor().execute("SELECT 1")
            pytest.fail(f"{what}: connected")
    for user, password in (analyst, superset):  # the controls: both generated logins log in
        cur = hive.connect(host=host, port=port, username=user, password=password, auth="CUSTOM").cursor()
        cur.execute("SELECT current_user()")
        assert cur.fetchall() == [(user,)]
