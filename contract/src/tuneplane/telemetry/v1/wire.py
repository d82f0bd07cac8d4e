"""Where in a message's wire bytes a string is not UTF-8.

Protobuf refuses to decode a message whose string field holds invalid UTF-8, and says only
that one did ("String field had bad UTF-8"). ``bad_utf8`` walks the wire format with the
message's descriptor and names the first such field with its indices, e.g.
``chunks[3].tag``, so a refusal can say what and where. It runs only after a decode failed.
"""

from __future__ import annotations

from google.protobuf.descriptor import Descriptor, FieldDescriptor

VARINT, FIXED64, LENGTH, FIXED32 = 0, 1, 2, 5


class Malformed(ValueError):
    """The bytes are not a well-formed message: there is no field to name."""


def varint(data: bytes, at: int) -> tuple[int, int]:
    """The varint at ``at`` and where the next field starts."""
    value = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise Malformed("truncated or overlong varint")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def _skip(data: bytes, at: int, wire_type: int) -> tuple[int, int]:
    """(start, end) of the field's value at ``at``."""
    if wire_type == VARINT:
        return at, varint(data, at)[1]
    if wire_type == FIXED64:
        return at, at + 8
    if wire_type == FIXED32:
        return at, at + 4
    if wire_type == LENGTH:
        size, start = varint(data, at)
        return start, start + size
    raise Malformed(f"wire type {wire_type} (groups are not used by this contract)")


def bad_utf8(descriptor: Descriptor, data: bytes, path: str = "") -> str | None:
    """The path of the first string field of ``data`` that is not UTF-8, or None."""
    seen: dict[int, int] = {}
    at = 0
    while at < len(data):
        key, at = varint(data, at)
        number, wire_type = key >> 3, key & 7
        start, at = _skip(data, at, wire_type)
        if at > len(data):
            raise Malformed("a field runs past the end of its message")
        field = descriptor.fields_by_number.get(number)
        if field is None or wire_type != LENGTH:
            continue
        index = seen.get(number, 0)
        seen[number] = index + 1
        where = f"{path}{field.name}"
        if field.is_repeated:
            where += f"[{index}]"
        if field.type == FieldDescriptor.TYPE_STRING:
            try:
                data[start:at].decode()
            except UnicodeDecodeError as exc:
                return f"{where} is not valid UTF-8 (byte {exc.start}: {exc.reason})"
        elif field.type == FieldDescriptor.TYPE_MESSAGE and field.message_type is not None:
            found = bad_utf8(field.message_type, data[start:at], where + ".")
            if found is not None:
                return found
    return None
