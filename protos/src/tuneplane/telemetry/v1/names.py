"""How contract values are named outside protobuf: rich-record kinds, and numbers in JSON."""

from __future__ import annotations

import math
from typing import Final

from tuneplane.telemetry.v1 import telemetry_pb2 as pb

#: RichRecord.Kind → the name read models, the API and ``tuneplane-collector read`` use.
RICH_KIND_NAMES: Final = {
    pb.RichRecord.KIND_IMAGE: "image", pb.RichRecord.KIND_HISTOGRAM: "histogram",
    pb.RichRecord.KIND_AUDIO: "audio", pb.RichRecord.KIND_TEXT: "text",
    pb.RichRecord.KIND_TENSOR: "tensor", pb.RichRecord.KIND_JSON: "json"}


def json_number(value: float) -> float | str:
    """JSON has no NaN or infinities: they are written as "nan", "inf", "-inf"."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value
