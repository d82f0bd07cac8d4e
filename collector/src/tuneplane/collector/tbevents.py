"""Decoding TensorBoard ``Event`` records into scalars, rich records and purge markers.

Only the first value of a tag carries its plugin metadata, so a decoder keeps what
each tag declared (``TagPlugins``); the caller persists it with the file's offset.
Scalars are TF1 ``simple_value`` and rank-0 numeric tensors of the ``scalars``
plugin (or scalar data class). Everything else is a rich record, never a scalar.

Purge markers are where TensorBoard's accumulator (``purge_orphaned_data``) purges, by the
rule of the run's ``file_version`` so far (``PurgeState``, carried from file to file of a
run): from version 2 a ``SessionLog.START``; before it (old-style files) a Summary event
whose step is below the previous Summary event's, which purges its own tags only.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from dataclasses import dataclass, field

from google.protobuf.message import DecodeError

from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.limits import MAX_BATCH_SERIES
from tuneplane.telemetry.v1.validation import name_problem
from tuneplane.tensorboard.v1 import event_pb2 as tb

Kind = pb.RichRecord.Kind
PLUGIN_KINDS = {"images": Kind.KIND_IMAGE, "histograms": Kind.KIND_HISTOGRAM,
                "audio": Kind.KIND_AUDIO, "text": Kind.KIND_TEXT}


def _half(bits: int) -> float:
    value: float = struct.unpack("<e", struct.pack("<H", bits & 0xFFFF))[0]
    return value


def _bfloat16(bits: int) -> float:
    value: float = struct.unpack("<f", struct.pack("<I", (bits & 0xFFFF) << 16))[0]
    return value


DT = tb.DataType
#: dtype → (values field, tensor_content struct format, conversion of one element)
SCALAR_DTYPES: dict[int, tuple[str, str, Callable[[float], float]]] = {
    DT.DT_FLOAT: ("float_val", "<f", float),
    DT.DT_DOUBLE: ("double_val", "<d", float),
    DT.DT_INT32: ("int_val", "<i", float),
    DT.DT_INT16: ("int_val", "<h", float),
    DT.DT_INT8: ("int_val", "<b", float),
    DT.DT_UINT8: ("int_val", "<B", float),
    DT.DT_UINT16: ("int_val", "<H", float),
    DT.DT_INT64: ("int64_val", "<q", float),
    DT.DT_UINT32: ("uint32_val", "<I", float),
    DT.DT_UINT64: ("uint64_val", "<Q", float),
    DT.DT_BOOL: ("bool_val", "<?", float),
    DT.DT_HALF: ("half_val", "<e", lambda bits: _half(int(bits))),
    DT.DT_BFLOAT16: ("half_val", "<H", lambda bits: _bfloat16(int(bits))),
}


class NotAScalar(ValueError):
    pass


def tensor_scalar(tensor: tb.TensorProto) -> float:
    """The value of a rank-0 numeric tensor."""
    if tensor.tensor_shape.dim or tensor.tensor_shape.unknown_rank:
        raise NotAScalar("tensor is not rank 0")
    spec = SCALAR_DTYPES.get(tensor.dtype)
    if spec is None:
        name = DT.Name(tensor.dtype) if tensor.dtype in DT.values() else str(tensor.dtype)
        raise NotAScalar(f"dtype {name} is not numeric")
    values_field, fmt, convert = spec
    if tensor.tensor_content:
        if len(tensor.tensor_content) != struct.calcsize(fmt):
            raise NotAScalar("tensor_content is not one element")
        return convert(struct.unpack(fmt, tensor.tensor_content)[0])
    values = getattr(tensor, values_field)
    if len(values) != 1:
        raise NotAScalar(f"{values_field} holds {len(values)} values")
    return convert(values[0])


#: (tag, step, wall_time, value): a plain tuple, this is the hot path.
Scalar = tuple[str, int, float, float]


@dataclass(slots=True)
class Decoded:
    scalars: list[Scalar] = field(default_factory=list)
    rich: list[pb.RichRecord] = field(default_factory=list)
    session_starts: list[pb.SessionStart] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def clear(self) -> None:
        self.scalars.clear()
        self.rich.clear()
        self.session_starts.clear()
        self.problems.clear()


#: tag → (plugin name, plugin content, data class) as declared by the tag's first value.
TagPlugins = dict[str, tuple[str, bytes, int]]


@dataclass(slots=True)
class PurgeState:
    """What TensorBoard's accumulator decides a run's purges by, as read so far."""

    file_version: float | None = None
    most_recent_step: int = -1  # of the last Summary event

    def restarts(self) -> bool:
        """Whether SessionLog.START purges (file_version 2 or more), not out-of-order steps."""
        return self.file_version is not None and self.file_version >= 2


def file_version(text: str) -> float:
    """``brain.Event:2`` → 2.0, as TensorBoard parses it (-1 when it cannot)."""
    try:
        return float(text.split("brain.Event:")[-1])
    except ValueError:
        return -1.0


#: A Summary event of one ``simple_value`` as TensorFlow, PyTorch and tensorboardX write it:
#: wall_time (absent when 0), step (absent when 0), then a summary of one value holding a tag
#: and the simple_value. The summary's bytes up to the value are the same for every event of
#: a tag ("the head"). Any other layout is left to ``decode``.
_SIMPLE_EVENT = re.compile(
    rb"(?:\x09(.{8}))?(?:\x10([\x80-\xff]{0,9}[\x00-\x7f]))?(\x2a.+\x15)(.{4})", re.DOTALL)
_wall_time = struct.Struct("<d").unpack
_simple_value = struct.Struct("<f").unpack


def _head_tag(head: bytes) -> str | None:
    """The tag of a summary head ``\x2a L \x0a L \x0a L tag \x15`` (one-byte lengths that
    nest), if it is a name."""
    size = len(head) - 7
    if size < 1 or head[5] != size or head[3] != size + 7 or head[1] != size + 9 or \
            head[2] != 0x0A or head[4] != 0x0A:
        return None
    try:
        tag = head[6:-1].decode()
    except UnicodeDecodeError:
        return None
    return tag if name_problem(tag) is None else None


def _varint(data: bytes) -> int | None:
    """A step's varint as int64, None past 64 bits."""
    size = len(data)
    if size == 1:
        return data[0]
    if size <= 4:  # steps below 2**28, unrolled: 7 bits of each byte, low byte first
        n = int.from_bytes(data, "little")
        if size == 2:
            return (n & 0x7F) | ((n >> 1) & 0x3F80)
        if size == 3:
            return (n & 0x7F) | ((n >> 1) & 0x3F80) | ((n >> 2) & 0x1FC000)
        if size == 4:
            return (n & 0x7F) | ((n >> 1) & 0x3F80) | ((n >> 2) & 0x1FC000) | \
                ((n >> 3) & 0xFE00000)
        return n
    number, shift = 0, 0
    for byte in data:
        number |= (byte & 0x7F) << shift
        shift += 7
    if number >= 1 << 64:
        return None
    return number - (1 << 64) if number >= 1 << 63 else number


def simple_scalar(data: bytes, heads: dict[bytes, str],
                  ) -> tuple[str, int, float, float] | None:
    """(tag, step, wall_time, value) of a one-``simple_value`` Summary event whose tag is a
    name, exactly as ``decode`` reads it; None for any other record (``decode`` reads it).

    The hot path of TensorBoard reading: one match instead of a message and its fields.
    ``heads`` maps summary heads already checked to their tag.
    """
    match = _SIMPLE_EVENT.fullmatch(data)
    if match is None:
        return None
    wall, step_bytes, head, value = match.groups()
    tag = heads.get(head)
    if tag is None:
        if (tag := _head_tag(head)) is None:
            return None
        heads[head] = tag
    step = 0 if step_bytes is None else _varint(step_bytes)
    if step is None:
        return None
    return (tag, step, _wall_time(wall)[0] if wall is not None else 0.0,
            _simple_value(value)[0])


def decode(data: bytes, *, source: str, file: str, offset: int, plugins: TagPlugins,
           state: PurgeState, out: Decoded) -> None:
    """Decode one event record into ``out``; unknown tags' metadata lands in ``plugins``,
    and what TensorBoard purges by in the run's ``state``."""
    try:
        event = tb.Event.FromString(data)
    except DecodeError as exc:
        out.problems.append(f"{file}@{offset}: not a TensorBoard Event: {exc}")
        return
    what = event.WhichOneof("what")
    if what == "file_version":
        state.file_version = file_version(event.file_version)
    elif what == "summary":
        if not state.restarts() and event.step < state.most_recent_step:
            tags = dict.fromkeys(t for v in event.summary.value
                                 if name_problem(t := v.tag or v.node_name) is None)
            if tags:  # no tag, nothing purged (a marker without tags is a restart)
                out.session_starts.append(pb.SessionStart(
                    source=source, file=file, offset=offset, step=event.step,
                    wall_time=event.wall_time, tags=list(tags)[:MAX_BATCH_SERIES]))
        state.most_recent_step = event.step
        for value in event.summary.value:
            _value(value, event, source, file, offset, plugins, out)
    elif what == "session_log" and event.session_log.status == tb.SessionLog.START and \
            state.restarts():
        out.session_starts.append(pb.SessionStart(source=source, file=file, offset=offset,
                                                  step=event.step, wall_time=event.wall_time))


def _value(value: tb.Summary.Value, event: tb.Event, source: str, file: str, offset: int,
           plugins: TagPlugins, out: Decoded) -> None:
    tag = value.tag or value.node_name
    if (problem := name_problem(tag)) is not None:
        out.problems.append(f"{file}@{offset}: tag {problem}; value skipped")
        return
    if value.HasField("metadata") and tag not in plugins:
        meta = value.metadata
        plugin = meta.plugin_data.plugin_name
        if (problem := name_problem(plugin, required=False)) is not None:
            out.problems.append(f"{file}@{offset}: tag {tag!r}: plugin name {problem}; "
                                "value skipped")
            return
        plugins[tag] = (plugin, meta.plugin_data.content, meta.data_class)
    plugin, content, data_class = plugins.get(tag, ("", b"", tb.DATA_CLASS_UNKNOWN))
    kind_of = value.WhichOneof("value")
    if kind_of == "simple_value":
        out.scalars.append((tag, event.step, event.wall_time, value.simple_value))
        return
    if kind_of == "tensor" and (plugin == "scalars" or data_class == tb.DATA_CLASS_SCALAR):
        try:
            out.scalars.append((tag, event.step, event.wall_time, tensor_scalar(value.tensor)))
            return
        except NotAScalar as exc:
            out.problems.append(f"{file}@{offset}: tag {tag!r} of the scalars plugin kept as a "
                                f"tensor: {exc}")
    if kind_of is None or kind_of == "obsolete_old_style_histogram":
        out.problems.append(f"{file}@{offset}: tag {tag!r} has no readable value; skipped")
        return
    kind = {"image": Kind.KIND_IMAGE, "histo": Kind.KIND_HISTOGRAM,
            "audio": Kind.KIND_AUDIO}.get(kind_of) or PLUGIN_KINDS.get(plugin, Kind.KIND_TENSOR)
    out.rich.append(pb.RichRecord(
        source=source, tag=tag, step=event.step, wall_time=event.wall_time, kind=kind,
        payload=value.SerializeToString(), plugin_name=plugin, plugin_content=content,
        file=file, offset=offset))
