"""What a stored TensorBoard record holds, read as TensorBoard's dashboards read it.

A rich record's object is the ``Summary.Value`` the event file held, byte for byte (the
collector keeps it whole). Writers put a kind of data in one of two shapes: TF1's fields
(``image``, ``audio``, ``histo``, as tensorboardX writes them) or TF2's tensors (with the
plugin's metadata). TensorBoard migrates the first into the second (``data_compat``);
these functions read both and give what the dashboards draw. A value that is not what
was asked for raises ``Undecodable`` with the reason, for the caller to name the record.

Every field is the writer's: a tensor's shape may claim thousands of dimensions, each up to
2**63 - 1. Its element count is found without multiplying them all out (their product
would be a bignum costing time quadratic in the rank), and a refusal names a few of them.
"""

from __future__ import annotations

import math
import struct
from typing import Final

from google.protobuf.message import DecodeError

from tuneplane.tensorboard.v1 import event_pb2 as tb

#: A histogram bucket as TensorBoard's histograms plugin serves it: (left, right, count).
Bucket = tuple[float, float, float]

#: Dimensions a refusal names before it says how many more there are.
SHOWN_DIMS: Final = 8

#: dtype → (values field, tensor_content struct format of one element)
FLOATS: Final = {tb.DataType.DT_DOUBLE: ("double_val", "d"),
                 tb.DataType.DT_FLOAT: ("float_val", "f")}


class Undecodable(ValueError):
    """The record does not hold what was asked for; the message completes "the record ..."
    (``holds a histo value, not text``)."""


def value_of(payload: bytes) -> tb.Summary.Value:
    try:
        return tb.Summary.Value.FromString(payload)
    except DecodeError as exc:
        raise Undecodable(f"is not a TensorBoard Summary.Value: {exc}") from None


def shape_of(tensor: tb.TensorProto) -> list[int]:
    return [dim.size for dim in tensor.tensor_shape.dim]


def shown(shape: list[int]) -> str:
    """A shape as a refusal names it: whole when short, else its first dimensions and how
    many it has."""
    if len(shape) <= SHOWN_DIMS:
        return str(shape)
    return f"[{', '.join(map(str, shape[:SHOWN_DIMS]))}, ... ({len(shape)} dimensions)]"


def holds(shape: list[int], count: int) -> bool:
    """Whether a tensor of ``shape`` has exactly ``count`` elements: the product of its
    dimensions, stopped as soon as it passes ``count`` (never a bignum)."""
    if any(size < 0 for size in shape):
        raise Undecodable(f"is a tensor whose shape {shown(shape)} has a negative dimension")
    if 0 in shape:
        return count == 0
    product = 1
    for size in shape:
        product *= size
        if product > count:
            return False
    return product == count


def strings(value: tb.Summary.Value, what: str) -> tuple[list[int], list[bytes]]:
    """The shape and elements of the value's string tensor (TF2 images, audio, text)."""
    if value.WhichOneof("value") != "tensor" or value.tensor.dtype != tb.DataType.DT_STRING:
        raise Undecodable(f"holds {held(value)}, not {what}")
    shape, elements = shape_of(value.tensor), list(value.tensor.string_val)
    if not holds(shape, len(elements)):
        raise Undecodable(f"is a string tensor of shape {shown(shape)} holding "
                          f"{len(elements)} elements")
    return shape, elements


def held(value: tb.Summary.Value) -> str:
    """What a value holds, for refusals: its field, or its tensor's dtype and shape."""
    kind = value.WhichOneof("value")
    if kind == "tensor":
        return (f"a {tb.DataType.Name(value.tensor.dtype)} tensor of shape "
                f"{shown(shape_of(value.tensor))}")
    if kind is None:
        return "no value"
    return f"{'an' if kind[0] in 'aeiou' else 'a'} {kind} value"


def media(payload: bytes, sample: int = 0) -> bytes:
    """The encoded image or audio clip number ``sample`` of an image or audio record."""
    value = value_of(payload)
    kind = value.WhichOneof("value")
    if kind in ("image", "audio"):
        if sample != 0:
            raise Undecodable(f"is a TF1 {kind} value: one sample, no sample {sample}")
        return (value.image.encoded_image_string if kind == "image"
                else value.audio.encoded_audio_string)
    shape, elements = strings(value, "an image or audio clip")
    if len(shape) == 1 and shape[0] >= 2:  # images: [width, height, image, ...]
        found = elements[2:]
    elif len(shape) == 2 and shape[1] == 2:  # audio: [[clip, label], ...]
        found = elements[0::2]
    else:
        raise Undecodable(f"is a string tensor of shape {shown(shape)}: neither images nor "
                          "audio")
    if not 0 <= sample < len(found):
        raise Undecodable(f"holds {len(found)} samples; there is no sample {sample}")
    return found[sample]


def floats(tensor: tb.TensorProto) -> list[float]:
    spec = FLOATS.get(tensor.dtype)
    if spec is None:
        raise Undecodable(f"is a {tb.DataType.Name(tensor.dtype)} tensor, not a histogram")
    field, fmt = spec
    if tensor.tensor_content:
        size = struct.calcsize(fmt)
        if len(tensor.tensor_content) % size:
            raise Undecodable(f"has a tensor_content of {len(tensor.tensor_content)} bytes, "
                              f"not whole {tb.DataType.Name(tensor.dtype)} elements")
        count = len(tensor.tensor_content) // size
        return list(struct.unpack(f"<{count}{fmt}", tensor.tensor_content))
    return list(getattr(tensor, field))


def histogram(payload: bytes) -> list[Bucket]:
    """The buckets of a histogram record, as TensorBoard's histograms plugin serves them."""
    value = value_of(payload)
    kind = value.WhichOneof("value")
    if kind == "histo":
        buckets = migrated(value.histo)
    elif kind == "tensor":
        shape = shape_of(value.tensor)
        if len(shape) != 2 or shape[1] != 3:
            raise Undecodable(f"holds {held(value)}, not histogram buckets of shape [k, 3]")
        data = floats(value.tensor)
        if len(data) != shape[0] * 3:
            raise Undecodable(f"is a tensor of shape {shown(shape)} holding {len(data)} "
                              "elements")
        buckets = [(data[i], data[i + 1], data[i + 2]) for i in range(0, len(data), 3)]
    else:
        raise Undecodable(f"holds {held(value)}, not a histogram")
    if not all(math.isfinite(x) for bucket in buckets for x in bucket):
        raise Undecodable("has a bucket edge or count that is not finite")
    return buckets


def migrated(histo: tb.HistogramProto) -> list[Bucket]:
    """TF1's buckets as TensorBoard migrates them (``data_compat``): empty buckets at either
    end dropped, the outer edges (often ±DBL_MAX) replaced by the data's min and max."""
    counts = list(histo.bucket)
    if len(histo.bucket_limit) != len(counts):
        raise Undecodable(f"has {len(histo.bucket_limit)} bucket limits for {len(counts)} "
                          "buckets")
    filled = [i for i, count in enumerate(counts) if count > 0]
    if not filled:
        return []
    start, end = filled[0], filled[-1]
    inner = list(histo.bucket_limit[start:end])
    return list(zip([histo.min, *inner], [*inner, histo.max], counts[start:end + 1],
                    strict=True))


def text(payload: bytes) -> tuple[list[int], list[str]]:
    """The shape and strings of a text record (UTF-8; what is not is replaced)."""
    shape, elements = strings(value_of(payload), "text")
    return shape, [element.decode("utf-8", errors="replace") for element in elements]
