"""tensorboardX, imported when a test first writes with it, not when its module is collected:
tensorboardX imports torch (over a second of CPU), which each of the fast tier's workers
would otherwise pay before running a test."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tensorboardX import SummaryWriter


def summary_writer(logdir: str) -> SummaryWriter:
    """tensorboardX's ``SummaryWriter`` writing under ``logdir``."""
    from tensorboardX import SummaryWriter

    return SummaryWriter(logdir)


def summary() -> ModuleType:
    """``tensorboardX.summary``: the summary values its writer would write."""
    return importlib.import_module("tensorboardX.summary")
