"""An HTTP/2 server over TLS that answers every request 404 with no gRPC status: what a proxy
or an ingress with no route for a gRPC method answers (a gateway misrouted during a change).
A gRPC client reads such an answer with no body as UNIMPLEMENTED, as it reads a gRPC server
that does not know the method. The protocol is the ``h2`` library's."""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import h2.config
import h2.connection
import h2.events
import h2.exceptions


@dataclass
class NotFound:
    body: bytes  # what each answer holds: an HTML page, or nothing
    port: int = 0
    requests: list[str] = field(default_factory=list)  # the paths asked, in order


def answer(connection: ssl.SSLSocket, server: NotFound) -> None:
    """Serves one client connection until it closes."""
    http = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
    http.initiate_connection()
    connection.sendall(http.data_to_send())
    while data := connection.recv(65536):
        for event in http.receive_data(data):
            if isinstance(event, h2.events.RequestReceived):
                path = dict(event.headers or []).get(b":path", b"").decode()
                server.requests.append(path)
                http.send_headers(event.stream_id, [(":status", "404"),
                                                    ("content-type", "text/html")],
                                  end_stream=not server.body)
                if server.body:
                    http.send_data(event.stream_id, server.body, end_stream=True)
            elif isinstance(event, h2.events.DataReceived) and event.stream_id is not None:
                http.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        connection.sendall(http.data_to_send())


@contextmanager
def not_found_server(tls_dir: Path, body: bytes = b"") -> Iterator[NotFound]:
    """A NotFound server on localhost with the certificate of ``tls_dir``."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(tls_dir / "server.pem", tls_dir / "server.key")
    context.set_alpn_protocols(["h2"])
    listener = socket.create_server(("localhost", 0))
    server = NotFound(body, port=listener.getsockname()[1])

    def serve() -> None:
        while True:
            try:
                plain, _ = listener.accept()
            except OSError:
                return  # closed: the test is over
            threading.Thread(target=serve_one, args=(plain,), daemon=True).start()

    def serve_one(plain: socket.socket) -> None:
        try:
            with context.wrap_socket(plain, server_side=True) as connection:
                answer(connection, server)
        except (OSError, h2.exceptions.ProtocolError):
            pass  # the client went away

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield server
    finally:
        listener.close()
