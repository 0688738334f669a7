"""agentledger server: the ledger's HTTP API (FastAPI) over a pluggable store.

``create_app(Settings(...))`` builds the app; ``agentledger serve`` runs it with uvicorn.
"""

from __future__ import annotations

from agentledger.server._app import StartupRefused, create_app
from agentledger.server._settings import Settings

__all__ = ["Settings", "StartupRefused", "create_app"]
