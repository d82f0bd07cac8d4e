"""The compiled reader of event files (``_native``, built from ``collector/rust``), when this
install has it.

The Python path (``tfrecord.scan``, ``tbevents``) is the reference and the fallback: an
install without the extension reads the same records into the same batches, only slower,
and says so once in the log.
"""

from __future__ import annotations

import logging
from types import ModuleType

log = logging.getLogger("tuneplane.collector")

_module: ModuleType | None
try:
    from tuneplane.collector import _native as _module
    _missing = ""
except ImportError as exc:  # a source install without a Rust toolchain, say
    _module, _missing = None, str(exc)
_said = False


def compiled() -> ModuleType | None:
    """The extension module, or None (said once in the log) when it is absent."""
    global _said
    if _module is None and not _said:
        _said = True
        log.warning("the compiled TensorBoard reader is not installed (%s); reading event "
                    "files in Python, at several times the CPU", _missing)
    return _module
