"""What a batch must be for projection to always store it: checked by ingest before
anything touches Kafka (refused: INVALID_ARGUMENT naming the field and index), and by the
projector on every record it reads (a record that fails is poison, dead-lettered alone).

Every string the read models keep is a name: not empty where it identifies something, no
NUL or other control character (PostgreSQL's text refuses NUL; the others break logs and
pages), bounded in bytes. Invalid UTF-8 never gets this far: protobuf refuses to decode it,
and ``parse`` names the field that held it. Enums are known values; counts and numbers fit
the read models' columns.
"""

from __future__ import annotations

import math
import re

from google.protobuf.message import DecodeError

from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.limits import (
    MAX_ATTEMPT,
    MAX_BATCH_BYTES,
    MAX_BATCH_CONFIG,
    MAX_BATCH_POINTS,
    MAX_BATCH_RICH,
    MAX_BATCH_SERIES,
    MAX_BATCH_SESSION_STARTS,
    MAX_CONFIG_TEXT_BYTES,
    MAX_NAME_BYTES,
    MAX_OFFSET,
    MAX_PATH_BYTES,
    MAX_POSITION_FILE_BYTES,
    MAX_POSITION_STATE_BYTES,
    MAX_RUN_PATH_BYTES,
)
from tuneplane.telemetry.v1.names import CONFIG_ORIGIN_NAMES, RICH_KIND_NAMES
from tuneplane.telemetry.v1.wire import Malformed, bad_utf8

CONTROL = re.compile(r"[\x00-\x1f\x7f]")
#: Largest wall time or seal time accepted: year 9999, as seconds since the epoch.
MAX_SECONDS = 253_402_300_799.0


class InvalidBatch(ValueError):
    """The batch breaks the contract; the message says what and where."""


def parse(payload: bytes) -> pb.Batch:
    """The batch in ``payload``, or InvalidBatch saying why it does not decode (naming the
    field, for a string that is not UTF-8)."""
    try:
        return pb.Batch.FromString(payload)
    except DecodeError as exc:
        try:
            found = bad_utf8(pb.Batch.DESCRIPTOR, payload)
        except Malformed as malformed:
            found = str(malformed)
        raise InvalidBatch(f"undecodable batch: {found or exc}") from None


def name_problem(value: str, limit: int = MAX_NAME_BYTES, *, required: bool = True) -> str | None:
    """Why ``value`` cannot be a name, or None. The collector asks this before sealing."""
    if value.isprintable() and 0 < len(value) <= limit // 4:
        return None  # the fast path: no control character, and at most 4 bytes a character
    if not value:
        return "is empty" if required else None
    try:
        size = len(value.encode())
    except UnicodeEncodeError as exc:  # a lone surrogate: no UTF-8 text, whatever its length
        return f"holds a lone surrogate at {exc.start}: {value[:40]!r}"
    if size > limit:
        return f"is {size} bytes, over the {limit} byte bound: {value[:40]!r}..."
    found = CONTROL.search(value)
    if found:
        return f"holds the control character {found.group()!r} at {found.start()}: {value[:40]!r}"
    return None


def run_path_problem(value: str, limit: int = MAX_RUN_PATH_BYTES) -> str | None:
    """Why ``value`` cannot be a series' run path, or None. A run path is TensorBoard's run:
    the directory of an event file relative to its log directory, empty for the log
    directory itself. It may hold '/' (nested directories: ``eval/fold_1``), but is relative
    and plain: no leading or trailing '/', no empty, '.' or '..' segment, no control
    character, at most ``MAX_RUN_PATH_BYTES``. The collector asks this before sealing."""
    if not value:
        return None  # the root
    problem = name_problem(value, limit)
    if problem:
        return problem
    if value.startswith("/"):
        return f"starts with '/' (it is relative to the log directory): {value[:40]!r}"
    if any(part in ("", ".", "..") for part in value.split("/")):
        return f"has an empty, '.' or '..' segment: {value[:40]!r}"
    return None


def escape_controls(value: str) -> str:
    """``value`` with each control character written as ``\\xNN``: for what only describes
    a record (a file's path), never for what identifies one."""
    return CONTROL.sub(lambda found: f"\\x{ord(found.group()):02x}", value)


def check_name(what: str, value: str, limit: int = MAX_NAME_BYTES, *,
               required: bool = True) -> None:
    problem = name_problem(value, limit, required=required)
    if problem:
        raise InvalidBatch(f"{what} {problem}")


def check_identity(identity: pb.BatchIdentity) -> None:
    for field in ("run_id", "member", "spool_epoch"):
        value = getattr(identity, field)
        check_name(f"identity.{field}", value)
        if "/" in value:
            raise InvalidBatch(f"identity.{field} holds '/', which separates identities: "
                               f"{value[:40]!r}")
    if not 1 <= identity.attempt <= MAX_ATTEMPT:
        raise InvalidBatch(f"identity.attempt must be 1 to {MAX_ATTEMPT}, not {identity.attempt}")
    if identity.sequence > MAX_OFFSET:
        raise InvalidBatch(f"identity.sequence {identity.sequence} is over {MAX_OFFSET}")


def check_time(what: str, seconds: float) -> None:
    if not -MAX_SECONDS <= seconds <= MAX_SECONDS:  # NaN fails too
        raise InvalidBatch(f"{what} {seconds!r} is not a time (seconds since the epoch)")


def check_chunks(batch: pb.Batch) -> int:
    points, series = 0, set()
    for i, chunk in enumerate(batch.chunks):
        check_name(f"chunks[{i}].source", chunk.source)
        check_name(f"chunks[{i}].tag", chunk.tag)
        if (problem := run_path_problem(chunk.run_path)) is not None:
            raise InvalidBatch(f"chunks[{i}].run_path {problem}")
        n = len(chunk.steps)
        if n == 0:
            raise InvalidBatch(f"chunks[{i}] ({chunk.source}/{chunk.tag}) has no points")
        if len(chunk.wall_times) != n or len(chunk.values) != n:
            raise InvalidBatch(
                f"chunks[{i}] ({chunk.source}/{chunk.tag}) has columns of unequal length: "
                f"steps {n}, wall_times {len(chunk.wall_times)}, values {len(chunk.values)}")
        points += n
        if points > MAX_BATCH_POINTS:
            raise InvalidBatch(f"batch has more than {MAX_BATCH_POINTS} points "
                               f"(bound reached at chunks[{i}])")
        series.add((chunk.source, chunk.run_path, chunk.tag))
        if len(series) > MAX_BATCH_SERIES:
            raise InvalidBatch(f"batch has more than {MAX_BATCH_SERIES} distinct series "
                               f"(bound reached at chunks[{i}])")
    return points


def check_rich(batch: pb.Batch) -> None:
    if len(batch.rich) > MAX_BATCH_RICH:
        raise InvalidBatch(f"batch has {len(batch.rich)} rich records, over the "
                           f"{MAX_BATCH_RICH} bound")
    for i, record in enumerate(batch.rich):
        check_name(f"rich[{i}].source", record.source)
        check_name(f"rich[{i}].tag", record.tag)
        where = f"rich[{i}] ({record.source}/{record.tag})"
        if record.kind == pb.RichRecord.KIND_UNSPECIFIED:
            raise InvalidBatch(f"{where} has no kind")
        if record.kind not in RICH_KIND_NAMES:
            raise InvalidBatch(f"{where}.kind {record.kind} is not a kind this service knows")
        check_name(f"{where}.plugin_name", record.plugin_name, required=False)
        check_name(f"{where}.file", record.file, MAX_PATH_BYTES, required=False)
        check_time(f"{where}.wall_time", record.wall_time)
        if record.offset > MAX_OFFSET:
            raise InvalidBatch(f"{where}.offset {record.offset} is over {MAX_OFFSET}")


def check_session_starts(batch: pb.Batch) -> None:
    if len(batch.session_starts) > MAX_BATCH_SESSION_STARTS:
        raise InvalidBatch(f"batch has {len(batch.session_starts)} session markers, over the "
                           f"{MAX_BATCH_SESSION_STARTS} bound")
    for i, marker in enumerate(batch.session_starts):
        check_name(f"session_starts[{i}].source", marker.source)
        check_name(f"session_starts[{i}].file", marker.file, MAX_PATH_BYTES, required=False)
        check_time(f"session_starts[{i}].wall_time", marker.wall_time)
        if marker.offset > MAX_OFFSET:
            raise InvalidBatch(f"session_starts[{i}].offset {marker.offset} is over {MAX_OFFSET}")
        if len(marker.tags) > MAX_BATCH_SERIES:
            raise InvalidBatch(f"session_starts[{i}] purges {len(marker.tags)} tags, over the "
                               f"{MAX_BATCH_SERIES} bound")
        for tag in marker.tags:
            check_name(f"session_starts[{i}].tags", tag)


def check_config(batch: pb.Batch) -> None:
    if len(batch.config) > MAX_BATCH_CONFIG:
        raise InvalidBatch(f"batch has {len(batch.config)} config entries, over the "
                           f"{MAX_BATCH_CONFIG} bound")
    for i, entry in enumerate(batch.config):
        check_name(f"config[{i}].source", entry.source,
                   required=entry.origin != pb.ConfigEntry.ORIGIN_ARTIFACT)
        check_name(f"config[{i}].key", entry.key)
        where = f"config[{i}] ({entry.key})"
        if entry.origin not in CONFIG_ORIGIN_NAMES:
            raise InvalidBatch(f"{where}.origin {entry.origin} is not an origin this service "
                               "knows")
        if (problem := run_path_problem(entry.run_path)) is not None:
            raise InvalidBatch(f"{where}.run_path {problem}")
        check_time(f"{where}.wall_time", entry.wall_time)
        held = entry.WhichOneof("value")
        if held is None:
            raise InvalidBatch(f"{where} has no value")
        if held == "number" and not math.isfinite(entry.number):
            raise InvalidBatch(f"{where}.number {entry.number!r} is not finite")
        if held == "text" and (len(entry.text.encode()) > MAX_CONFIG_TEXT_BYTES
                               or "\x00" in entry.text):
            raise InvalidBatch(f"{where}.text is over {MAX_CONFIG_TEXT_BYTES} bytes or holds "
                               "a NUL character")


def check_position(batch: pb.Batch) -> None:
    """A source position is stored as the projector's checkpoint row (its file part of the
    row's key) and given back to a collector, which joins its file to a source root: the
    file is a relative path of names (as a run path is), the state holds no NUL."""
    if not batch.HasField("position"):
        return
    at = batch.position
    check_name("position.source", at.source)
    if (problem := run_path_problem(at.file, MAX_POSITION_FILE_BYTES)) is not None:
        raise InvalidBatch(f"position.file {problem}")
    check_name("position.fingerprint", at.fingerprint, required=False)
    for field in ("generation", "offset", "line"):
        if getattr(at, field) > MAX_OFFSET:
            raise InvalidBatch(f"position.{field} {getattr(at, field)} is over {MAX_OFFSET}")
    if len(at.state.encode()) > MAX_POSITION_STATE_BYTES:
        raise InvalidBatch(f"position.state is over {MAX_POSITION_STATE_BYTES} bytes")
    if "\x00" in at.state:
        raise InvalidBatch("position.state holds a NUL character")


def validate(batch: pb.Batch, size: int) -> int:
    """Returns the batch's point count, or raises InvalidBatch."""
    if size > MAX_BATCH_BYTES:
        raise InvalidBatch(f"batch is {size} bytes, over the {MAX_BATCH_BYTES} byte bound")
    check_identity(batch.identity)
    check_time("sealed_at", batch.sealed_at)
    points = check_chunks(batch)
    check_rich(batch)
    check_session_starts(batch)
    check_config(batch)
    check_position(batch)
    if not (batch.chunks or batch.rich or batch.session_starts or batch.config):
        raise InvalidBatch("batch is empty")
    return points
