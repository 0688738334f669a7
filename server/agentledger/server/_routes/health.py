"""``/health`` and ``/health/deep``: liveness plus a database round trip; no key needed."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from fastapi import APIRouter, Response

from agentledger.server._http import json_response
from agentledger.server._routes._deps import StoreDep

__all__ = ["router", "server_version"]

router = APIRouter(tags=["health"])


def server_version() -> str:
    """The installed ``agentledger`` distribution version."""
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
