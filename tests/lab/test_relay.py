"""The impairment relay's parts, without processes: loss process, rate limit and queue, config errors."""

from __future__ import annotations

import asyncio
import math
import random

import pytest

from lab.config import parse_config
from lab.relay import GilbertLoss, Link, Relay, _Direction
from quicexp.config import ConfigError


@pytest.mark.parametrize("loss,burst", [(0.05, 1.0), (0.05, 4.0), (0.2, 2.0)])
def test_gilbert_loss_rate_and_burst_length(loss, burst):
    process = GilbertLoss(loss, burst, random.Random(7))
    n = 200_000
    outcomes = [process.lost() for _ in range(n)]
    rate = sum(outcomes) / n
    bursts, run = [], 0
    for lost in outcomes:
        if lost:
            run += 1
        elif run:
            bursts.append(run)
            run = 0
    # stationary rate within 5 sigma; the burst-count variance grows with the burst length
    assert abs(rate - loss) <= 5 * math.sqrt(loss * (1 - loss) * burst / n)
    mean_burst = sum(bursts) / len(bursts)
    assert mean_burst == pytest.approx(1 / (1 - loss) if burst == 1 else burst, rel=0.05)


def test_rate_limit_spaces_departures_and_drops_at_the_tail():
    link = Link(delay_ms=10, bandwidth_mbps=8, queue_bytes=3000)  # 1000 bytes take 1 ms
    direction = _Direction(link, GilbertLoss(0, 1, random.Random(0)))
    departures = [direction.admit(0.0, 1000) for _ in range(5)]
    assert departures[:3] == pytest.approx([0.011, 0.012, 0.013])
    assert departures[3:] == [None, None]  # the queue holds 3000 bytes
    assert direction.counters.dropped_queue == 2
    assert direction.admit(0.0025, 1000) == pytest.approx(0.014)  # two have left by then


def test_relay_forwards_both_ways_on_loopback_with_delay():
    async def exchange() -> tuple[float, dict]:
        loop = asyncio.get_running_loop()
        echo, _ = await loop.create_datagram_endpoint(asyncio.DatagramProtocol, local_addr=("127.0.0.1", 0))

        class Echo(asyncio.DatagramProtocol):
            def datagram_received(self, data, addr):
                echo.sendto(data, addr)

        echo.set_protocol(Echo())
        relay = await Relay(echo.get_extra_info("sockname")[1], Link(delay_ms=20), Link(delay_ms=20)).start()
        got = loop.create_future()

        class Client(asyncio.DatagramProtocol):
            def datagram_received(self, data, addr):
                if not got.done():
                    got.set_result(loop.time())

        client, _ = await loop.create_datagram_endpoint(Client, remote_addr=("127.0.0.1", relay.port))
        sent = loop.time()
        client.sendto(b"ping")
        arrived = await asyncio.wait_for(got, 5)
        counters = relay.counters()
        for t in (client, echo):
            t.close()
        relay.close()
        return (arrived - sent) * 1000, counters

    rtt_ms, counters = asyncio.run(exchange())
    assert 40 <= rtt_ms < 200
    assert counters["client_to_server"]["forwarded"] == counters["server_to_client"]["forwarded"] == 1
    assert counters["server_to_client"]["delayed"] == 1


def test_relay_refuses_other_addresses_and_bad_links():
    with pytest.raises(ValueError):
        Relay(1, Link(), Link(), host="10.0.0.1")
    with pytest.raises(ValueError):
        Link(loss=1.5)


@pytest.mark.parametrize("raw,message", [
    ({"experiment_id": "x", "arms": [{"name": "a", "stack": "ngtcp2", "cc": "vegas"}], "grid": {"rtt_ms": [10]}},
     "no congestion control 'vegas'"),
    ({"experiment_id": "x", "arms": [{"name": "a", "stack": "aioquic", "cc": "bbr"}], "grid": {"rtt_ms": [10]}},
     "no congestion control 'bbr'"),
    ({"experiment_id": "x", "arms": [{"name": "a", "stack": "msquic"}], "grid": {"rtt_ms": [10]}}, "arms.0.stack"),
    ({"experiment_id": "x", "arms": [{"name": "a", "stack": "ngtcp2"}], "grid": {"rtt_ms": []}}, "grid.rtt_ms"),
    ([1, 2], "mapping"),
])
def test_bad_lab_configs_are_one_line_errors(raw, message):
    with pytest.raises(ConfigError, match=message) as info:
        parse_config(raw)
    assert "\n" not in str(info.value)


def test_grid_is_the_cross_product():
    config = parse_config({"experiment_id": "x", "arms": [{"name": "a", "stack": "ngtcp2", "cc": "bbr2"}],
                           "grid": {"rtt_ms": [10, 50], "loss": [0, 0.01], "burst": [1, 3], "bandwidth_mbps": [None, 5]}})
    names = [c.name for c in config.conditions]
    assert len(names) == len(set(names)) == 16
    assert "rtt50ms_loss1pct_burst3_5mbps" in names


def test_the_example_config_loads():
    from pathlib import Path

    from lab.config import load_config

    config = load_config(Path(__file__).resolve().parents[2] / "lab" / "examples" / "congestion_control.yaml")
    assert [a.congestion_control for a in config.arms] == ["cubic", "bbr", "reno"]
    assert len(config.conditions) == 4
    with pytest.raises(ConfigError, match="cannot read lab config"):
        load_config("/nonexistent/lab.yaml")
