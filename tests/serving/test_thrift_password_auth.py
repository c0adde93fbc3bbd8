"""The Thrift server's login check (jvm/src quicexp.jvm.ThriftPasswordAuth), called in a real JVM
the way HiveServer2 calls it: the credentials file named by the system property, with the password
inline (``quicexp serve start``) or as ``password_file``, the docker compose secret read where it
is (deploy/entrypoint.sh), so the secret is never copied."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pyspark
import pytest

from quicexp.config import load_settings

pytestmark = pytest.mark.spark

PROBE = """
import quicexp.jvm.ThriftPasswordAuth;
public class Probe {
  public static void main(String[] a) {
    System.setProperty("quicexp.thrift.credentials", a[0]);
    for (int i = 1; i + 1 < a.length; i += 2) {
      try { new ThriftPasswordAuth().Authenticate(a[i], a[i + 1]); System.out.println("ok"); }
      catch (Exception e) { System.out.println("refused: " + e.getMessage()); }
    }
  }
}
"""


@pytest.fixture(scope="module")
def login(tmp_path_factory):
    """login(credentials_file, (user, password), …) -> one answer per attempt, in one JVM."""
    from quicexp.jars import project_jar

    work = tmp_path_factory.mktemp("thrift-auth")
    jar = project_jar(load_settings(home=work / "home").jar_cache)
    classpath = f"{work}:{jar}:{Path(pyspark.__file__).parent / 'jars'}/*"
    (work / "Probe.java").write_text(PROBE)
    subprocess.run(["javac", "-cp", classpath, "-d", str(work), str(work / "Probe.java")], check=True,
                   capture_output=True)  # fmt: skip

    def attempt(credentials: Path, *pairs: tuple[str, str]) -> list[str]:
        argv = [str(credentials), *(x for pair in pairs for x in pair)]
        out = subprocess.run(["java", "-cp", classpath, "Probe", *argv], capture_output=True, text=True,
                             timeout=120, check=True)  # fmt: skip
        return out.stdout.split("\n")[: len(pairs)]

    return attempt


def test_a_password_file_is_read_where_it_is_at_every_login(login, tmp_path):
    secret = tmp_path / "thrift_password"
    secret.write_text("first-secret\n")
    credentials = tmp_path / "credentials.properties"
    credentials.write_text(f"user=quicexp\npassword_file={secret}\n")
    attempts = [("quicexp", "first-secret"), ("quicexp", "first-secret\n"), ("quicexp", "wrong"),
                ("someone", "first-secret")]  # fmt: skip
    assert login(credentials, *attempts) == [
        "ok",
        "refused: quicexp: wrong user name or password",
        "refused: quicexp: wrong user name or password",
        "refused: quicexp: wrong user name or password",
    ]
    secret.write_text("rotated")  # no newline: the first line is the password either way
    assert login(credentials, ("quicexp", "rotated"), ("quicexp", "first-secret")) == [
        "ok",
        "refused: quicexp: wrong user name or password",
    ]
    secret.unlink()  # fail closed
    assert login(credentials, ("quicexp", "rotated")) == [f"refused: quicexp: cannot read the password file {secret}"]


def test_an_inline_password_still_logs_in_and_an_empty_one_refuses_all(login, tmp_path):
    credentials = tmp_path / "credentials.properties"
    credentials.write_text("user=quicexp\npassword=generated\n")
    assert login(credentials, ("quicexp", "generated"), ("quicexp", "")) == [
        "ok",
        "refused: quicexp: wrong user name or password",
    ]
    credentials.write_text("user=quicexp\npassword=\n")
    assert login(credentials, ("quicexp", "")) == [
        "refused: quicexp: the Thrift server's credentials file lacks user or password"
    ]
