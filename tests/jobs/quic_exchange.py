"""A real HTTP/3 exchange between an aioquic client and server on 127.0.0.1, with qlog on both sides.

A user-space UDP relay sits between them and drops every ``drop_every``-th datagram from
the server once the handshake is done, so the server's qlog has real losses to report
(this kernel has no netem). Certificates are generated here (self-signed, ``cryptography``).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import ssl
from dataclasses import dataclass
from pathlib import Path

from aioquic.asyncio import connect, serve
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.logger import QuicFileLogger


def self_signed(folder: Path) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


class H3Server(QuicConnectionProtocol):
    """Answers every GET /<n> with n bytes."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._h3 = H3Connection(self._quic)

    def quic_event_received(self, event) -> None:
        for ev in self._h3.handle_event(event):
            if isinstance(ev, HeadersReceived) and ev.stream_ended:
                path = dict(ev.headers)[b":path"].decode()
                body = b"q" * int(path.strip("/"))
                self._h3.send_headers(ev.stream_id, [(b":status", b"200"), (b"content-length", str(len(body)).encode())])
                self._h3.send_data(ev.stream_id, body, end_stream=True)
        self.transmit()


class H3Client(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._h3 = H3Connection(self._quic)
        self._bodies: dict[int, bytearray] = {}
        self._done: dict[int, asyncio.Future] = {}

    def quic_event_received(self, event) -> None:
        for ev in self._h3.handle_event(event):
            if isinstance(ev, (DataReceived, HeadersReceived)):
                if isinstance(ev, DataReceived):
                    self._bodies.setdefault(ev.stream_id, bytearray()).extend(ev.data)
                if ev.stream_ended and ev.stream_id in self._done:
                    self._done.pop(ev.stream_id).set_result(bytes(self._bodies.get(ev.stream_id, b"")))

    async def get(self, size: int) -> bytes:
        stream_id = self._quic.get_next_available_stream_id()
        self._h3.send_headers(stream_id, [(b":method", b"GET"), (b":scheme", b"https"),
                                          (b":authority", b"localhost"), (b":path", f"/{size}".encode())],
                              end_stream=True)
        waiter = asyncio.get_running_loop().create_future()
        self._done[stream_id] = waiter
        self.transmit()
        return await asyncio.wait_for(waiter, 30)


class _Relay(asyncio.DatagramProtocol):
    """client ⇄ relay ⇄ server; drops every ``drop_every``-th server datagram after the first ``spare``."""

    def __init__(self, server_addr, drop_every: int, spare: int) -> None:
        self.server_addr, self.drop_every, self.spare = server_addr, drop_every, spare
        self.client_addr = None
        self.from_server = 0
        self.dropped = 0
        self.transport = None

    def connection_made(self, transport) -> None:
        self.transport = transport

    def datagram_received(self, data, addr) -> None:
        if addr == self.server_addr:
            self.from_server += 1
            if self.from_server > self.spare and self.from_server % self.drop_every == 0:
                self.dropped += 1
                return
            self.transport.sendto(data, self.client_addr)
        else:
            self.client_addr = addr
            self.transport.sendto(data, self.server_addr)


@dataclass
class Exchange:
    odcid: str
    client_qlog: Path
    server_qlog: Path
    client_srtt_ms: float
    bytes_received: int
    dropped: int


async def _exchange(workdir: Path, port: int, sizes: list[int], drop_every: int) -> Exchange:
    cert, key = self_signed(workdir)
    client_dir, server_dir = workdir / "client", workdir / "server"
    client_dir.mkdir(), server_dir.mkdir()
    server_cfg = QuicConfiguration(is_client=False, alpn_protocols=H3_ALPN, quic_logger=QuicFileLogger(str(server_dir)))
    server_cfg.load_cert_chain(str(cert), str(key))
    server = await serve("127.0.0.1", port, configuration=server_cfg, create_protocol=H3Server)
    loop = asyncio.get_running_loop()
    relay = _Relay(("127.0.0.1", port), drop_every, spare=12)
    relay_transport, _ = await loop.create_datagram_endpoint(lambda: relay, local_addr=("127.0.0.1", 0))
    relay_port = relay_transport.get_extra_info("sockname")[1]
    client_cfg = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN, verify_mode=ssl.CERT_NONE,
                                   server_name="localhost", quic_logger=QuicFileLogger(str(client_dir)))
    try:
        async with connect("127.0.0.1", relay_port, configuration=client_cfg, create_protocol=H3Client) as client:
            received = 0
            for size in sizes:
                received += len(await client.get(size))
            srtt_ms = client._quic._loss._rtt_smoothed * 1000.0
        for _ in range(200):  # the server writes its trace when the connection is torn down
            if list(server_dir.glob("*.qlog")):
                break
            await asyncio.sleep(0.05)
    finally:
        server.close()
        relay_transport.close()
    client_file = next(client_dir.glob("*.qlog"))
    server_file = next(server_dir.glob("*.qlog"))
    return Exchange(odcid=client_file.name.split(".")[0], client_qlog=client_file, server_qlog=server_file,
                    client_srtt_ms=srtt_ms, bytes_received=received, dropped=relay.dropped)


def run_exchange(workdir: Path, port: int, sizes: list[int], drop_every: int = 9) -> Exchange:
    """Serve, connect, GET each size over HTTP/3, close; return where the qlog files are."""
    return asyncio.run(_exchange(workdir, port, sizes, drop_every))
