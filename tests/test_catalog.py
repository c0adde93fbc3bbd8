"""The embedded catalog's Derby server belongs to one home; another home on its port is refused."""

from __future__ import annotations

import pytest

from quicexp.catalog import catalog_status, is_listening, start_derby, stop_derby
from quicexp.config import ConfigError, load_settings
from tests.conftest import free_port

# These start Derby network servers (JVMs) themselves, without the session fixtures.
pytestmark = pytest.mark.spark


def test_a_second_home_on_the_same_port_gets_a_one_line_error_and_leaves_the_server_alone(tmp_path):
    port = free_port()
    first = load_settings(home=tmp_path / "first", catalog={"port": port})
    second = load_settings(home=tmp_path / "second", catalog={"port": port})
    assert start_derby(first) is True
    try:
        assert start_derby(first) is False  # already running, and it is this home's: reused

        with pytest.raises(ConfigError) as refused:
            start_derby(second)
        message = str(refused.value)
        assert "\n" not in message
        assert f"127.0.0.1:{port}" in message and str(first.metastore_dir) in message
        assert "QUICEXP_CATALOG__PORT" in message

        assert "port taken by the metastore server of" in catalog_status(second)
        assert catalog_status(first).endswith(f"running (data in {first.metastore_dir})")
        assert stop_derby(second) is False, "a home must not stop another home's server"
        assert is_listening("127.0.0.1", port)
    finally:
        assert stop_derby(first) is True
    assert not is_listening("127.0.0.1", port)
    assert not (second.metastore_dir / "derby-server.log").exists()


def test_another_home_that_names_the_same_metastore_shares_the_server(tmp_path):
    """Lake namespaces, Airflow tasks and the cluster driver: their own home, the run's metastore."""
    port = free_port()
    first = load_settings(home=tmp_path / "first", catalog={"port": port})
    task = load_settings(home=tmp_path / "task", metastore_dir=first.metastore_dir, catalog={"port": port})
    assert start_derby(first) is True
    try:
        assert start_derby(task) is False
        assert catalog_status(task).endswith(f"running (data in {first.metastore_dir})")
    finally:
        assert stop_derby(task) is True  # the same server: whoever is done last may stop it
    assert not is_listening("127.0.0.1", port)


def _derby_server_args(port: int) -> list[str]:
    import psutil

    for proc in psutil.process_iter(["cmdline"]):
        args = proc.info["cmdline"] or []
        if "org.apache.derby.drda.NetworkServerControl" in args and str(port) in args:
            return args
    raise AssertionError(f"no Derby server process on port {port}")


def test_the_metastore_server_requires_its_generated_password_and_runs_under_a_security_manager(tmp_path):
    """Issue 19: Derby ran with no authentication and -noSecurityManager."""
    import stat
    import subprocess

    from quicexp.catalog import DERBY_USER, _derby_classpath, derby_password, derby_properties_file
    from quicexp.jars import project_jar

    port = free_port()
    settings = load_settings(home=tmp_path / "home", catalog={"port": port})
    assert start_derby(settings) is True
    try:
        password = derby_password(settings, create=False)
        assert password and len(password) >= 24
        props = derby_properties_file(settings)
        assert stat.S_IMODE(props.stat().st_mode) == 0o600
        assert stat.S_IMODE(settings.metastore_dir.stat().st_mode) == 0o700
        args = _derby_server_args(port)
        assert "-noSecurityManager" not in args and "-Djava.security.manager" in args
        assert not any(password in a for a in args), "the password must stay off the command line"
        probe = tmp_path / "Probe.java"
        probe.write_text(
            "import java.sql.*;\n"
            "public class Probe { public static void main(String[] a) {\n"
            "  try (Connection c = DriverManager.getConnection(a[0], a[1], a[2])) { System.out.println(\"connected\"); }\n"
            "  catch (SQLException e) { System.out.println(\"refused: \" + e.getMessage()); } } }\n"
        )
        subprocess.run(["javac", "-d", str(tmp_path), str(probe)], check=True, capture_output=True)
        classpath = f"{tmp_path}:{_derby_classpath(settings)}:{project_jar(settings.jar_cache)}"

        def connect(database: str, user: str, secret: str) -> str:
            url = f"jdbc:derby://127.0.0.1:{port}/{database};create=true"
            out = subprocess.run(["java", "-cp", classpath, "Probe", url, user, secret],
                                 capture_output=True, text=True, timeout=120)  # fmt: skip
            return out.stdout.strip()

        inside = settings.metastore_dir / "metastore_db"
        assert connect(str(inside), DERBY_USER, password) == "connected"  # the control
        assert connect(str(inside), DERBY_USER, password + "x").startswith("refused")
        assert connect(str(inside), "someone", "anything").startswith("refused")
        # the security manager: the server may not create a database outside its folder
        outside = tmp_path / "outside_db"
        assert "refused" in connect(str(outside), DERBY_USER, password)
        assert not outside.exists()
    finally:
        assert stop_derby(settings) is True  # shutdown authenticates from the properties file
    assert not is_listening("127.0.0.1", port)
