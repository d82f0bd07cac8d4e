"""The web API's routers, one module per resource.

Route modules do not use ``from __future__ import annotations``: FastAPI reads their
signatures, and the series router builds its parameter types from the settings' caps.
"""
