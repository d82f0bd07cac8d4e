"""Rich JSONL channels: records checked against the channel's JSON Schema and byte budgets.

Line format::

    {"step": 120, "wall_time": 1732867200.5, "record": {...}}

A record over ``max_record_bytes``, off its schema, or beyond the channel's bytes per
minute is rejected with its reason and counted — never truncated, never silently
dropped. Malformed lines are reported with file and line. The schema is compiled offline:
a ``$ref`` outside it is refused, nothing is fetched (``channelschema``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fastjsonschema
import orjson

from tuneplane.collector.draft import BatchDraft, Position, ReadStep
from tuneplane.collector.fence import OPEN
from tuneplane.collector.jsonl import READ_BYTES, Opener, skip_overlong
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.channelschema import compile_offline


@dataclass(frozen=True, slots=True)
class ChannelSpec:
    channel_id: str
    path: Path
    schema: dict[str, Any]
    max_record_bytes: int
    max_bytes_per_minute: int


class Budget:
    """A token bucket of bytes: ``max_bytes_per_minute`` capacity, refilled continuously."""

    def __init__(self, per_minute: int, now: float) -> None:
        self._capacity = float(per_minute)
        self._tokens = float(per_minute)
        self._rate = per_minute / 60.0
        self._at = now

    def take(self, size: int, now: float) -> bool:
        self._tokens = min(self._capacity, self._tokens + (now - self._at) * self._rate)
        self._at = now
        if size > self._tokens:
            return False
        self._tokens -= size
        return True


class ChannelReader:
    def __init__(self, spec: ChannelSpec, clock: Callable[[], float],
                 open_file: Opener = OPEN.open) -> None:
        self.spec = spec
        self._open = open_file
        self._validate = compile_offline(spec.schema, f"channel {spec.channel_id} schema")
        self._clock = clock
        self._budget = Budget(spec.max_bytes_per_minute, clock())

    def _check(self, raw: bytes, where: str, out: ReadStep) -> pb.RichRecord | None:
        spec = self.spec
        if len(raw) > spec.max_record_bytes:
            out.rejected["over max_record_bytes"] += 1
            out.problems.append(f"{where}: rejected: record of {len(raw)} bytes is over the "
                                f"channel's max_record_bytes {spec.max_record_bytes}")
            return None
        try:
            line = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            out.problems.append(f"{where}: not JSON: {exc}")
            return None
        step, wall_time = (line.get("step"), line.get("wall_time")) if isinstance(
            line, dict) else (None, None)
        if not isinstance(step, int) or isinstance(step, bool) or not isinstance(
                wall_time, int | float) or not math.isfinite(wall_time) or "record" not in line:
            out.problems.append(f"{where}: a channel line needs integer 'step', number "
                                "'wall_time' and 'record'")
            return None
        try:
            self._validate(line["record"])
        except fastjsonschema.JsonSchemaValueException as exc:
            out.rejected["off schema"] += 1
            out.problems.append(f"{where}: rejected: off the channel's schema: "
                                f"{exc.message.replace('data', 'record', 1)}")
            return None
        return pb.RichRecord(source=spec.channel_id, tag=spec.channel_id, step=step,
                             wall_time=float(wall_time), kind=pb.RichRecord.KIND_JSON,
                             payload=orjson.dumps(line["record"]), file=spec.path.name)

    def read(self, start: Position, *, max_bytes: int) -> ReadStep:
        out = ReadStep(BatchDraft(self.spec.channel_id), start)
        with self._open(self.spec.path) as handle:
            handle.seek(start.offset)
            data = handle.read(READ_BYTES)
        offset, line, begin = start.offset, start.line, 0
        while (end := data.find(b"\n", begin)) >= 0:
            raw = data[begin:end]
            if raw.strip():
                where = f"{self.spec.path}:{line}"
                record = self._check(raw, where, out)
                if record is not None:
                    record.offset = offset
                    if not out.draft.empty() and (
                            out.draft.approx_bytes + out.draft.rich_cost(record) > max_bytes
                            or out.draft.crowded(rich=1)):
                        break  # the next batch starts with this record
                    if self._budget.take(len(raw), self._clock()):
                        out.draft.add_rich(record)
                    else:
                        out.rejected["over max_bytes_per_minute"] += 1
                        out.problems.append(
                            f"{where}: rejected: over the channel's budget of "
                            f"{self.spec.max_bytes_per_minute} bytes per minute")
            offset += end + 1 - begin
            line += 1
            begin = end + 1
        else:
            out.at_end = len(data) < READ_BYTES
            if begin == 0 and not out.at_end:  # one line longer than a whole read
                offset, line, out.at_end = skip_overlong(self.spec.path, offset, line,
                                                         out.problems, self._open)
        out.position = Position(offset, line)
        return out
