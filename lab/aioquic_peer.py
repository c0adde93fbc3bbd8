"""aioquic HTTP/3 server and client as processes of their own, for the lab.

``python -m lab.aioquic_peer server --port P --cert C --key K --qlog-dir D [--cc reno|cubic]``
answers ``GET /<n>`` with ``n`` bytes until terminated;
``python -m lab.aioquic_peer client --port P --qlog-dir D --size N [--requests K] [--cc …]``
fetches ``K`` bodies of ``N`` bytes on one connection, prints one JSON line
``{"odcid", "latency_ms": [...], "ttfb_ms": [...], "bytes": total}`` and exits. Loopback only.
Both ask for 4 MiB socket buffers (``--socket-buffer``, lab.host.enlarge_buffers): the lab's runs
must not lose datagrams on the host.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import ssl
import sys
import time

from aioquic.asyncio import connect, serve
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.logger import QuicFileLogger

from lab.host import BUFFER_BYTES, enlarge_buffers

LOOPBACK = ("127.0.0.1", "::1", "localhost")


class _FlushingLogger(QuicFileLogger):
    """aioquic writes a connection's trace when the connection ends (after its draining period,
    or its idle timeout when the peer's CONNECTION_CLOSE was lost): at the server's stop, the
    traces of connections that have not ended are written as they are."""

    def flush(self) -> None:
        for trace in list(self._traces):
            self.end_trace(trace)


class _Server(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._h3 = H3Connection(self._quic)

    def quic_event_received(self, event) -> None:
        for ev in self._h3.handle_event(event):
            if isinstance(ev, HeadersReceived) and ev.stream_ended:
                path = dict(ev.headers).get(b":path", b"/0").decode()
                try:
                    size = max(0, min(int(path.strip("/") or 0), 1 << 30))
                except ValueError:
                    size = 0
                self._h3.send_headers(ev.stream_id, [(b":status", b"200"), (b"content-length", str(size).encode())])
                self._h3.send_data(ev.stream_id, b"q" * size, end_stream=True)
        self.transmit()


class _Client(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._h3 = H3Connection(self._quic)
        self._got: dict[int, int] = {}
        self._first: dict[int, float] = {}
        self._done: dict[int, asyncio.Future] = {}

    def quic_event_received(self, event) -> None:
        for ev in self._h3.handle_event(event):
            if isinstance(ev, (DataReceived, HeadersReceived)):
                self._first.setdefault(ev.stream_id, time.monotonic())
                if isinstance(ev, DataReceived):
                    self._got[ev.stream_id] = self._got.get(ev.stream_id, 0) + len(ev.data)
                if ev.stream_ended and ev.stream_id in self._done:
                    self._done.pop(ev.stream_id).set_result(self._got.get(ev.stream_id, 0))

    async def get(self, size: int, timeout: float) -> tuple[int, float, float]:
        started = time.monotonic()
        stream_id = self._quic.get_next_available_stream_id()
        self._h3.send_headers(stream_id, [(b":method", b"GET"), (b":scheme", b"https"),
                                          (b":authority", b"localhost"), (b":path", f"/{size}".encode())],
                              end_stream=True)
        waiter = asyncio.get_running_loop().create_future()
        self._done[stream_id] = waiter
        self.transmit()
        got = await asyncio.wait_for(waiter, timeout)
        return got, (time.monotonic() - started) * 1000, (self._first[stream_id] - started) * 1000


async def _serve(args) -> None:
    logger = _FlushingLogger(args.qlog_dir)
    cfg = QuicConfiguration(is_client=False, alpn_protocols=H3_ALPN, quic_logger=logger,
                            congestion_control_algorithm=args.cc)
    cfg.load_cert_chain(args.cert, args.key)
    server = await serve(args.host, args.port, configuration=cfg, create_protocol=_Server)
    enlarge_buffers(server._transport.get_extra_info("socket"), args.socket_buffer)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print("ready", flush=True)
    await stop.wait()
    server.close()
    logger.flush()


async def _fetch(args) -> dict:
    cfg = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN, verify_mode=ssl.CERT_NONE,
                            server_name="localhost", quic_logger=QuicFileLogger(args.qlog_dir),
                            congestion_control_algorithm=args.cc)
    latency, ttfb, total = [], [], 0
    async with connect(args.host, args.port, configuration=cfg, create_protocol=_Client) as client:
        odcid = client._quic._original_destination_connection_id.hex()
        enlarge_buffers(client._transport.get_extra_info("socket"), args.socket_buffer)  # before the bodies flow
        for _ in range(args.requests):
            got, ms, first = await client.get(args.size, args.timeout)
            total += got
            latency.append(ms)
            ttfb.append(first)
    return {"odcid": odcid, "latency_ms": latency, "ttfb_ms": ttfb, "bytes": total}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lab.aioquic_peer")
    parser.add_argument("role", choices=("server", "client"))
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--qlog-dir", required=True)
    parser.add_argument("--cc", default="reno", choices=("reno", "cubic"))
    parser.add_argument("--cert")
    parser.add_argument("--key")
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--socket-buffer", type=int, default=BUFFER_BYTES, help="bytes; 0: the system's default")
    args = parser.parse_args(argv)
    if args.host not in LOOPBACK:
        print("lab.aioquic_peer: loopback addresses only", file=sys.stderr)
        return 2
    if args.role == "server":
        if not (args.cert and args.key):
            print("lab.aioquic_peer: server needs --cert and --key", file=sys.stderr)
            return 2
        asyncio.run(_serve(args))
        return 0
    try:
        print(json.dumps(asyncio.run(_fetch(args))), flush=True)
    except (TimeoutError, ConnectionError) as exc:
        print(f"lab.aioquic_peer: transfer failed: {exc!r}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
