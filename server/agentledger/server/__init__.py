"""agentledger server: the ledger's HTTP API (FastAPI) over a pluggable store.

``create_app(Settings(...))`` builds the app; ``agentledger serve`` runs it with uvicorn.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentledger.server._app import StartupRefused, create_app
    from agentledger.server._settings import Settings

__all__ = ["Settings", "StartupRefused", "create_app"]

# Imported on first use (PEP 562): ``agentledger <any command>`` imports this package to
# register ``serve``, and FastAPI's import alone costs ~0.8 s of every command's start-up.
_LAZY = {
    "Settings": "agentledger.server._settings",
    "StartupRefused": "agentledger.server._app",
    "create_app": "agentledger.server._app",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
