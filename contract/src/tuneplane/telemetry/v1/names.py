"""How contract values are named outside protobuf: rich-record kinds, numbers in JSON, and
the names of runs, members, sources and channels."""

from __future__ import annotations

import math
import re
from typing import Final

from tuneplane.telemetry.v1 import telemetry_pb2 as pb

#: RichRecord.Kind → the name read models, the API and ``tuneplane-collector read`` use.
RICH_KIND_NAMES: Final = {
    pb.RichRecord.KIND_IMAGE: "image", pb.RichRecord.KIND_HISTOGRAM: "histogram",
    pb.RichRecord.KIND_AUDIO: "audio", pb.RichRecord.KIND_TEXT: "text",
    pb.RichRecord.KIND_TENSOR: "tensor", pb.RichRecord.KIND_JSON: "json"}

#: ConfigEntry.Origin → its name in the read models and the API.
CONFIG_ORIGIN_NAMES: Final = {
    pb.ConfigEntry.ORIGIN_HPARAMS: "hparams", pb.ConfigEntry.ORIGIN_JSONL: "jsonl",
    pb.ConfigEntry.ORIGIN_ARTIFACT: "artifact"}

#: A name that is safe as one path component (a spool directory, a file): runs, members,
#: nodes, sources and channels. ``fullmatch``: ``$`` alone would let a final newline by.
NAME_PATTERN: Final = "^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
NAME_RULE: Final = "1-128 of A-Z a-z 0-9 . _ - (starting with a letter or digit)"


def is_name(text: object) -> bool:
    return isinstance(text, str) and NAME.fullmatch(text) is not None


def json_number(value: float) -> float | str:
    """JSON has no NaN or infinities: they are written as "nan", "inf", "-inf"."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value
