"""A user-space UDP impairment relay on loopback: delay, random and bursty loss, rate limit and queue.

client ⇄ relay (127.0.0.1:port) ⇄ server. Each client address gets its own upstream socket, so
several clients can share one relay and the server's answers find their way back. Each
direction is an independent link:

1. **loss** at the link's entry: a two-state Gilbert model (Gilbert 1960; the form used by
   netem's ``loss gemodel``). In the bad state every datagram is lost, in the good state none;
   ``p`` = P(good → bad), ``r`` = P(bad → good), so the mean loss rate is ``p / (p + r)`` and
   the mean burst length ``1 / r``. ``burst = 1`` is independent (Bernoulli) loss.
2. **rate limit and queue**: a FIFO served at ``bandwidth``; a datagram that would find more
   than ``queue_bytes`` ahead of it is dropped (drop-tail). Its departure is
   ``max(now, previous departure) + size / bandwidth``.
3. **delay**: ``delay_ms`` (half the configured RTT) added after the queue.

Counters per direction: ``received``, ``forwarded``, ``dropped_random``, ``dropped_queue``,
``delayed`` (forwarded after a positive wait). Timers are asyncio's (millisecond-grade on a
loaded machine); see docs/lab.md for what this can and cannot emulate.

The relay's sockets ask for 4 MiB receive and send buffers (:func:`lab.host.enlarge_buffers`):
a burst the event loop cannot read at once waits in the kernel instead of being dropped there,
where the relay would never count it. :meth:`Relay.ports` names its sockets, so the lab can read
their drop counters.
"""

from __future__ import annotations

import asyncio
import random
import socket
from dataclasses import asdict, dataclass, field

from lab.host import BUFFER_BYTES, enlarge_buffers


@dataclass(frozen=True)
class Link:
    """One direction's impairment."""

    delay_ms: float = 0.0
    loss: float = 0.0
    burst: float = 1.0  # mean loss-burst length in datagrams; 1 = independent loss
    bandwidth_mbps: float | None = None  # None: no rate limit
    queue_bytes: int = 64 * 1024

    def __post_init__(self) -> None:
        if not 0.0 <= self.loss < 1.0:
            raise ValueError(f"loss must be in [0, 1), got {self.loss}")
        if self.burst < 1.0:
            raise ValueError(f"burst must be >= 1, got {self.burst}")
        if self.delay_ms < 0 or (self.bandwidth_mbps is not None and self.bandwidth_mbps <= 0):
            raise ValueError("delay must be >= 0 and bandwidth > 0")


@dataclass
class Counters:
    received: int = 0
    forwarded: int = 0
    dropped_random: int = 0
    dropped_queue: int = 0
    delayed: int = 0
    bytes_forwarded: int = 0

    @property
    def dropped(self) -> int:
        return self.dropped_random + self.dropped_queue


class GilbertLoss:
    """Two-state loss process (see the module docstring); ``burst = 1`` is Bernoulli."""

    def __init__(self, loss: float, burst: float, rng: random.Random) -> None:
        self.rng, self.bad = rng, False
        self.bernoulli = burst <= 1.0
        self.loss = loss
        self.r = 1.0 / burst
        self.p = loss * self.r / (1.0 - loss) if loss > 0 else 0.0

    def lost(self) -> bool:
        if self.loss <= 0:
            return False
        if self.bernoulli:
            return self.rng.random() < self.loss
        self.bad = (self.rng.random() >= self.r) if self.bad else (self.rng.random() < self.p)
        return self.bad


@dataclass
class _Direction:
    link: Link
    loss: GilbertLoss
    counters: Counters = field(default_factory=Counters)
    busy_until: float = 0.0
    queued: list = field(default_factory=list)  # (departure, size) of datagrams not yet departed

    def admit(self, now: float, size: int) -> float | None:
        """Departure time of a datagram entering now, or None when it is dropped."""
        self.counters.received += 1
        if self.loss.lost():
            self.counters.dropped_random += 1
            return None
        depart = now
        if self.link.bandwidth_mbps:
            self.queued = [(t, s) for t, s in self.queued if t > now]
            if sum(s for _, s in self.queued) + size > self.link.queue_bytes:
                self.counters.dropped_queue += 1
                return None
            depart = max(now, self.busy_until) + size * 8 / (self.link.bandwidth_mbps * 1e6)
            self.busy_until = depart
            self.queued.append((depart, size))
        return depart + self.link.delay_ms / 1000.0


class _Listen(asyncio.DatagramProtocol):
    def __init__(self, relay: Relay) -> None:
        self.relay = relay

    def datagram_received(self, data: bytes, addr) -> None:
        self.relay._from_client(data, addr)


class _Upstream(asyncio.DatagramProtocol):
    def __init__(self, relay: Relay, client) -> None:
        self.relay, self.client = relay, client

    def datagram_received(self, data: bytes, addr) -> None:
        self.relay._from_server(data, self.client)


class Relay:
    """Start with :meth:`start` inside a running loop; ``port`` is where clients connect."""

    def __init__(self, server_port: int, upstream: Link, downstream: Link, *, seed: int = 0,
                 host: str = "127.0.0.1", buffer_bytes: int = BUFFER_BYTES) -> None:
        if host not in ("127.0.0.1", "::1", "localhost"):
            raise ValueError("the relay serves loopback only")
        host = "127.0.0.1" if host == "localhost" else host
        self.host, self.server = host, (host, server_port)
        self.buffer_bytes = buffer_bytes
        self.receive_buffer = 0  # what the kernel granted the listening socket (getsockopt's value)
        rng = random.Random(seed)
        self.up = _Direction(upstream, GilbertLoss(upstream.loss, upstream.burst, random.Random(rng.random())))
        self.down = _Direction(downstream, GilbertLoss(downstream.loss, downstream.burst, random.Random(rng.random())))
        self.port = 0
        self._listen = None
        self._upstreams: dict = {}
        self._pending: set[asyncio.Task] = set()

    def _socket(self, *, bind: tuple | None = None, connect: tuple | None = None) -> socket.socket:
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_DGRAM)
        try:
            granted = enlarge_buffers(sock, self.buffer_bytes)
            if bind is not None:
                sock.bind(bind)
            if connect is not None:
                sock.connect(connect)
            sock.setblocking(False)
        except OSError:
            sock.close()
            raise
        self.receive_buffer = self.receive_buffer or granted
        return sock

    async def start(self) -> Relay:
        loop = asyncio.get_running_loop()
        self._listen, _ = await loop.create_datagram_endpoint(lambda: _Listen(self),
                                                              sock=self._socket(bind=(self.host, 0)))
        self.port = self._listen.get_extra_info("sockname")[1]
        return self

    def ports(self) -> list[int]:
        """Local ports of the relay's sockets: the listening one and one per client address."""
        transports = [self._listen, *(t for t in self._upstreams.values() if not isinstance(t, list))]
        return [t.get_extra_info("sockname")[1] for t in transports if t is not None]

    def _schedule(self, direction: _Direction, data: bytes, send) -> None:
        loop = asyncio.get_running_loop()
        now = loop.time()
        at = direction.admit(now, len(data))
        if at is None:
            return

        def deliver() -> None:
            direction.counters.forwarded += 1
            direction.counters.bytes_forwarded += len(data)
            send(data)

        if at > now:
            direction.counters.delayed += 1
            loop.call_at(at, deliver)
        else:
            deliver()

    def _from_client(self, data: bytes, addr) -> None:
        upstream = self._upstreams.get(addr)
        if upstream is None:
            self._upstreams[addr] = upstream = []  # datagrams wait here while the socket opens
            task = asyncio.ensure_future(self._open(addr))
            self._pending.add(task)
            task.add_done_callback(self._pending.discard)
        if isinstance(upstream, list):
            upstream.append(data)
            return
        self._schedule(self.up, data, upstream.sendto)

    async def _open(self, client) -> None:
        loop = asyncio.get_running_loop()
        transport, _ = await loop.create_datagram_endpoint(lambda: _Upstream(self, client),
                                                           sock=self._socket(bind=(self.host, 0), connect=self.server))
        waiting = self._upstreams[client]
        self._upstreams[client] = transport
        for data in waiting:
            self._schedule(self.up, data, transport.sendto)

    def _from_server(self, data: bytes, client) -> None:
        if self._listen is not None:
            self._schedule(self.down, data, lambda d: self._listen.sendto(d, client))

    def counters(self) -> dict[str, dict]:
        return {name: {**asdict(d.counters), "dropped": d.counters.dropped}
                for name, d in (("client_to_server", self.up), ("server_to_client", self.down))}

    def close(self) -> None:
        for transport in self._upstreams.values():
            if not isinstance(transport, list):
                transport.close()
        if self._listen is not None:
            self._listen.close()
            self._listen = None
