"""The compiled reader of event files (``_native``, built from ``collector/rust``), when this
install has it.

The Python path (``tfrecord.scan``, ``tbevents``) is the reference and the fallback: an
install without the extension reads the same records into the same batches, only slower,
and says so once in the log.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from tuneplane.collector._native import Frames

log = logging.getLogger("tuneplane.collector")

#: frames(buffer, base offset, record limit, is_name) → the buffer's records and points
Framing: TypeAlias = "Callable[[bytes, int, int | None, Callable[[str], bool]], Frames]"

try:
    from tuneplane.collector._native import frames as _frames

    _found: Framing | None = _frames
    _missing = ""
except ImportError as exc:  # a source install without a Rust toolchain, say
    _found, _missing = None, str(exc)
_said = False


def compiled() -> Framing | None:
    """The compiled reader's ``frames``, or None (said once in the log) when it is absent."""
    global _said
    if _found is None and not _said:
        _said = True
        log.warning("the compiled TensorBoard reader is not installed (%s); reading event "
                    "files in Python, at several times the CPU", _missing)
    return _found
