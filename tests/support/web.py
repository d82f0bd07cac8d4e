"""Clients of the web application."""

from __future__ import annotations

from collections.abc import Callable

import httpx

Connect = Callable[..., httpx.AsyncClient]
