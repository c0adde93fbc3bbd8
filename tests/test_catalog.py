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
