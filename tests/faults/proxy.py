"""A TCP proxy between collectors and ingest that cuts connections and drops replies.

Dropping replies is what a lost ACK looks like: ingest received the batch and made it
durable, and the collector never hears so; it must resend the same identity.
"""

from __future__ import annotations

import asyncio
import contextlib
import time


class FaultyLink:
    def __init__(self, upstream_port: int) -> None:
        self._upstream = upstream_port
        self._server: asyncio.Server | None = None
        self._open: set[asyncio.StreamWriter] = set()
        self._drop_until = 0.0
        self.port = 0
        self.dropped_replies = 0
        self.cuts = 0

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        self.cut()
        await self._server.wait_closed()

    def cut(self) -> None:
        """Close every connection in both directions, mid-call or not."""
        self.cuts += 1
        for writer in list(self._open):
            writer.transport.abort()

    def drop_replies(self, seconds: float) -> None:
        self._drop_until = time.monotonic() + seconds

    async def _serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            server_r, server_w = await asyncio.open_connection("127.0.0.1", self._upstream)
        except OSError:
            client_w.transport.abort()  # ingest is down: the collector sees UNAVAILABLE
            return
        self._open |= {client_w, server_w}
        await asyncio.gather(self._pipe(client_r, server_w, client_w, replies=False),
                             self._pipe(server_r, client_w, server_w, replies=True))
        self._open -= {client_w, server_w}

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    other: asyncio.StreamWriter, *, replies: bool) -> None:
        """Copy one direction; a reply in a drop window is discarded and the link closed."""
        try:
            while data := await reader.read(65536):
                if replies and time.monotonic() < self._drop_until:
                    self.dropped_replies += 1
                    break
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            for end in (writer, other):
                with contextlib.suppress(Exception):
                    end.transport.abort()
