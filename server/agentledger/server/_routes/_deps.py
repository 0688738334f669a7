"""Shared route dependencies: the store and settings of the running app.

Both are ``async``: they only read ``app.state``, and FastAPI runs a plain ``def`` dependency
in its threadpool, one hand-off per dependency per request.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from agentledger.server._settings import Settings
from agentledger.server._store.base import LedgerStore

__all__ = ["SettingsDep", "StoreDep"]


async def _store(request: Request) -> LedgerStore:
    store: LedgerStore = request.app.state.store
    return store


async def _settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


StoreDep = Annotated[LedgerStore, Depends(_store)]
SettingsDep = Annotated[Settings, Depends(_settings)]
