"""The web's reads of the object store (``read.bucket``) against the real S3 server, a port
nothing listens on, and a store answering 503: an object that is not there is
``ObjectMissing`` (naming it), a store that does not answer, cannot now or answers
anything else (no such bucket) is ``ObjectStoreAway``, each after a bounded number of
tries."""

from __future__ import annotations

import http.server
import threading
import uuid
from collections.abc import Iterator

import pytest

from tests.support.environment import Endpoints, free_port
from tuneplane.common.objectstore import s3_client
from tuneplane.web.read.bucket import ATTEMPTS, Bucket, ObjectMissing, ObjectStoreAway


async def test_an_object_is_read_and_one_not_there_is_missing(initialised: Endpoints) -> None:
    bucket = Bucket.of(initialised.s3_endpoint, initialised.s3_bucket)
    key, payload = f"tests/bucket/{uuid.uuid4().hex}", uuid.uuid4().bytes
    s3_client(initialised.s3_endpoint).put_object(Bucket=initialised.s3_bucket, Key=key,
                                                  Body=payload)
    assert await bucket.read(key) == payload
    with pytest.raises(ObjectMissing) as missing:
        await bucket.read(key + "-gone")
    assert str(missing.value) == f"the object {key + '-gone'!r} is not in the object store"
    with pytest.raises(ObjectStoreAway, match="the object store answered NoSuchBucket for "):
        await Bucket.of(initialised.s3_endpoint, "no-such-bucket-here").read(key)


async def test_a_store_nothing_listens_for_is_away() -> None:
    bucket = Bucket.of(f"http://127.0.0.1:{free_port()}", "tuneplane")
    with pytest.raises(ObjectStoreAway, match="the object store did not answer: "):
        await bucket.read("rich/sha256/00/00")


class Unavailable(http.server.BaseHTTPRequestHandler):
    """An S3 endpoint that answers every request 503 SlowDown, counting them."""

    calls = 0

    def do_GET(self) -> None:
        type(self).calls += 1
        body = (b'<?xml version="1.0"?><Error><Code>SlowDown</Code>'
                b"<Message>Please reduce your request rate.</Message></Error>")
        self.send_response(503)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def unavailable() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Unavailable)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    Unavailable.calls = 0
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


async def test_a_store_answering_503_is_away_after_a_bounded_number_of_tries(
        unavailable: str) -> None:
    bucket = Bucket.of(unavailable, "tuneplane")
    with pytest.raises(ObjectStoreAway, match="the object store answered SlowDown for "):
        await bucket.read("rich/sha256/00/00")
    assert Unavailable.calls == ATTEMPTS
