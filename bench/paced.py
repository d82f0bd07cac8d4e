"""Callers at a set pace: ``callers`` connections together asking ``rate`` answers a second,
each on a schedule of its own (one request every ``callers / rate`` seconds, the callers'
schedules staggered), the way a team's Charts pages ask, not as fast as answers come back.

What ``callers.load`` (wrk) measures is the other case: callers that each ask again the
moment they are answered, so their latency is their number over the answers a second
(Little's law) whatever the web does. Here the load is set and the latency is what the web
gives at it: the latency the issue's "p99 at N answers a second" names.

A request's latency counts from when it was due, not from when it could be sent: when an
answer comes late, the caller's next request goes out late too, and that wait is counted
(no coordinated omission, as wrk2 measures). The callers are one asyncio loop of plain
HTTP/1.1 keep-alive connections, which costs this machine a few percent of a core at the
rates measured here.
"""

from __future__ import annotations

import asyncio
import statistics
from urllib.parse import urlsplit

from bench.callers import Load


async def answered(reader: asyncio.StreamReader) -> int:
    """One answer read whole off ``reader``: its status (answers carry Content-Length)."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split()[1])
    length = next((int(line.split(b":", 1)[1]) for line in lines[1:]
                   if line.lower().startswith(b"content-length:")), None)
    if length is None:
        raise ValueError(f"an answer without Content-Length: {head[:200]!r}")
    await reader.readexactly(length)
    return status


async def caller(url: str, token: str, first: float, period: float, until: float,
                 latencies: list[float], refused: list[int]) -> None:
    """Requests due at ``first``, ``first + period``, ... before ``until`` (loop time)."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    target = f"{parts.path}?{parts.query}" if parts.query else parts.path
    request = (f"GET {target} HTTP/1.1\r\nHost: {host}:{port}\r\n"
               f"Authorization: Bearer {token}\r\n\r\n").encode()
    loop = asyncio.get_running_loop()
    reader, writer = await asyncio.open_connection(host, port)
    try:
        due = first
        while due < until:
            if (wait := due - loop.time()) > 0:
                await asyncio.sleep(wait)
            writer.write(request)
            status = await answered(reader)
            if 200 <= status < 300:
                latencies.append(loop.time() - due)
            else:
                refused.append(status)
            due += period
    finally:
        writer.close()


async def paced_async(url: str, tokens: list[str], callers: int, rate: float,
                      seconds: float) -> Load:
    """``callers`` keep-alive connections asking ``url`` ``rate`` times a second in all for
    ``seconds``, each as the next of ``tokens`` (a user each): answers a second (2xx), p50
    and p99 from each request's due time, and the answers that were not 2xx."""
    loop = asyncio.get_running_loop()
    period = callers / rate
    start = loop.time() + 0.5  # every connection open before the first is due
    until = start + seconds
    latencies: list[float] = []
    refused: list[int] = []
    await asyncio.gather(*(
        caller(url, tokens[i % len(tokens)], start + period * i / callers, period, until,
               latencies, refused) for i in range(callers)))
    elapsed = loop.time() - start
    if not latencies:
        raise ValueError(f"no request was answered 2xx ({len(refused)} refused)")
    latencies.sort()
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    return Load(callers, len(latencies) / elapsed, statistics.median(latencies) * 1000,
                p99 * 1000, len(refused))
