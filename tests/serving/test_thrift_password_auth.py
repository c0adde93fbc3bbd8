"""The Thrift server's logins (jvm/src quicexp.jvm.ThriftPasswordAuth and Logins), called in a real
JVM the way HiveServer2 and the SQL guard call them: the logins file named by the system property,
written by ``quicexp serve`` (each login's role and PBKDF2 key, the password only in the login's
own 0600 file) or by hand (docker compose: ``user`` + ``password_file``, the secret read where it
is, so it is never copied)."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

import pyspark
import pytest

from quicexp.app.serve import ThriftPaths, add_login, ensure_logins, pbkdf2_entry, thrift_login
from quicexp.config import ConfigError, load_settings

pytestmark = pytest.mark.spark

PROBE = """
package quicexp.jvm;
public class Probe {
  public static void main(String[] a) throws Exception {
    System.setProperty("quicexp.thrift.credentials", a[0]);
    for (int i = 1; i + 1 < a.length; i += 2) {
      if (a[i].equals("role?")) {
        Logins.Role role = Logins.current().roleOf(a[i + 1]);
        System.out.println("role " + (role == null ? "none" : role.name));
        continue;
      }
      try { new ThriftPasswordAuth().Authenticate(a[i], a[i + 1]); System.out.println("ok"); }
      catch (Exception e) { System.out.println("refused: " + e.getMessage()); }
    }
  }
}
"""
WRONG = "refused: quicexp: wrong user name or password"


@pytest.fixture(scope="module")
def login(tmp_path_factory):
    """login(logins_file, (user, password) | ("role?", user), …) -> one answer each, in one JVM."""
    from quicexp.jars import project_jar

    work = tmp_path_factory.mktemp("thrift-auth")
    jar = project_jar(load_settings(home=work / "home").jar_cache)
    # the project jar and HiveServer2's provider interface (a short class path: a quick JVM start)
    hive_service = next((Path(pyspark.__file__).parent / "jars").glob("spark-hive-thriftserver_*.jar"))
    classpath = f"{work}:{jar}:{hive_service}"
    (work / "Probe.java").write_text(PROBE)
    subprocess.run(["javac", "-cp", classpath, "-d", str(work), str(work / "Probe.java")], check=True,
                   capture_output=True)  # fmt: skip

    def attempt(logins: Path, *pairs: tuple[str, str]) -> list[str]:
        argv = [str(logins), *(x for pair in pairs for x in pair)]
        out = subprocess.run(["java", "-cp", classpath, "quicexp.jvm.Probe", *argv], capture_output=True,
                             text=True, timeout=120, check=True)  # fmt: skip
        return out.stdout.split("\n")[: len(pairs)]

    return attempt


def test_generated_logins_have_roles_keys_and_private_files(login, tmp_path):
    settings = load_settings(home=tmp_path / "home", state_dir=tmp_path / "state")
    ensure_logins(settings)
    paths = ThriftPaths.of(settings)
    analyst, superset = thrift_login(settings, "analyst"), thrift_login(settings, "superset")
    for path in (paths.logins, paths.login_file("analyst"), paths.login_file("superset")):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert stat.S_IMODE(paths.logins.parent.stat().st_mode) == 0o700
    server = paths.logins.read_text()
    assert analyst[1] not in server and superset[1] not in server, "the server's file holds keys, not passwords"
    assert login(
        paths.logins,
        analyst, superset, (analyst[0], superset[1]), ("nobody", analyst[1]), (analyst[0], ""),
        ("role?", "analyst"), ("role?", "superset"), ("role?", "nobody"),
    ) == ["ok", "ok", WRONG, WRONG, WRONG, "role analyst", "role superset", "role none"]  # fmt: skip
    ensure_logins(settings)  # idempotent: the passwords stay
    assert thrift_login(settings, "analyst") == analyst


def test_an_operator_adds_a_login_or_an_ldap_role_without_a_restart(login, tmp_path):
    settings = load_settings(home=tmp_path / "home", state_dir=tmp_path / "state")
    ensure_logins(settings)
    paths = ThriftPaths.of(settings)
    client = add_login(settings, "alice", "analyst")
    assert client == paths.login_file("alice") and stat.S_IMODE(client.stat().st_mode) == 0o600
    alice = thrift_login(settings, "alice")
    add_login(settings, "bob", "superset", external=True)  # LDAP authenticates bob: a role, no password
    assert not paths.login_file("bob").exists()
    assert login(paths.logins, alice, ("bob", "anything"), ("role?", "alice"), ("role?", "bob")) == [
        "ok", WRONG, "role analyst", "role superset",
    ]  # fmt: skip
    rotated = add_login(settings, "alice", "analyst")  # a new password; the old one stops working
    assert login(paths.logins, thrift_login(settings, "alice"), alice) == ["ok", WRONG] and rotated
    for bad in (("Alice", "analyst"), ("alice", "admin")):
        with pytest.raises(ConfigError):
            add_login(settings, *bad)


def test_a_compose_secret_is_read_where_it_is_at_every_login(login, tmp_path):
    secret = tmp_path / "thrift_password"
    secret.write_text("first-secret\n")
    logins = tmp_path / "logins.properties"
    logins.write_text(f"user=quicexp\npassword_file={secret}\n")  # deploy/entrypoint.sh's form
    attempts = [("quicexp", "first-secret"), ("quicexp", "first-secret\n"), ("quicexp", "wrong"),
                ("someone", "first-secret"), ("role?", "quicexp")]  # fmt: skip
    assert login(logins, *attempts) == ["ok", WRONG, WRONG, WRONG, "role analyst"]
    secret.write_text("rotated")  # no newline: the first line is the password either way
    assert login(logins, ("quicexp", "rotated"), ("quicexp", "first-secret")) == ["ok", WRONG]
    secret.unlink()  # fail closed
    assert login(logins, ("quicexp", "rotated")) == [f"refused: quicexp: cannot read the password file {secret}"]


def test_keys_inline_passwords_and_a_missing_file(login, tmp_path):
    logins = tmp_path / "logins.properties"
    logins.write_text(
        f"login.carol.role=superset\nlogin.carol.pbkdf2={pbkdf2_entry('c-secret', iterations=1000)}\n"
        "login.dave.role=analyst\nlogin.dave.password=d-secret\n"
        "login.erin.role=auditor\nlogin.erin.password=e-secret\n"  # not a role: no login
        "default.role=analyst\n"
    )
    assert login(
        logins, ("carol", "c-secret"), ("carol", "d-secret"), ("dave", "d-secret"), ("erin", "e-secret"),
        ("role?", "carol"), ("role?", "ldap-user"),
    ) == ["ok", WRONG, "ok", WRONG, "role superset", "role analyst"]  # fmt: skip
    logins.unlink()
    [answer] = login(logins, ("carol", "c-secret"))
    assert answer.startswith("refused: quicexp: cannot read the logins file")
