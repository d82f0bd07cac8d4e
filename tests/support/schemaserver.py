"""A local HTTP server that serves one JSON Schema and counts who fetched it: proves a
``$ref`` would have been fetched, and that it was not."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

SERVED = b'{"type": "integer"}'


@dataclass
class SchemaServer:
    url: str
    fetched: list[str] = field(default_factory=list)


@contextmanager
def schema_server() -> Iterator[SchemaServer]:
    """``server.url`` serves ``SERVED`` at any path; ``server.fetched`` lists the paths."""
    server = SchemaServer("")

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            server.fetched.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(SERVED)

        def log_message(self, format: str, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    server.url = f"http://127.0.0.1:{httpd.server_port}"
    try:
        yield server
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()
