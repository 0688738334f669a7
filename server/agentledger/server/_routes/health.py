"""``/health`` and ``/health/deep``: liveness plus a database round trip; no key needed."""

from __future__ import annotations

import functools
from importlib.metadata import PackageNotFoundError, version

from fastapi import APIRouter, Response

from agentledger.server._http import json_response
from agentledger.server._routes._deps import StoreDep

__all__ = ["router", "server_version"]

router = APIRouter(tags=["health"])


@functools.cache
def server_version() -> str:
    """The installed ``agentledger`` distribution version, read once per process (reading the
    distribution's metadata costs about 0.5 ms, more than the rest of a ``/health`` request)."""
    try:
        return version("agentledger")
    except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "0+unknown"


@router.get("/health")
def health(store: StoreDep) -> Response:
    """``{"status": "ok", "version": ...}`` when the database answers."""
    store.ping()
    return json_response({"status": "ok", "version": server_version()})


@router.get("/health/deep")
def health_deep(store: StoreDep) -> Response:
    """``/health`` with its checks named (the reference client's ``zizkadb doctor`` reads
    ``checks``): ``{"status": "ok", "version": ..., "checks": {"database": {"ok": true}}}``."""
    store.ping()
    checks = {"database": {"ok": True}}
    return json_response({"status": "ok", "version": server_version(), "checks": checks})
