"""The dashboard's only way to read the ledger: the app's own ``/v1`` routes, called in process.

Every page is built from the JSON the public API answers, through the same routes, store
functions, auth checks (scopes, agent binding) and limits (Datasette's ``datasette.client``
works the same way). Requests go through :class:`httpx.ASGITransport` straight into the ASGI
app: no socket, no second query path, and an optional route that is not mounted (search,
baselines) is detected in the app's OpenAPI schema instead of guessed.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import httpx
import orjson
from fastapi import FastAPI, Request

from agentledger.protocol.errors import LedgerError
from agentledger.server._loopback import ORIGIN_HEADERS

__all__ = ["ApiError", "LedgerAPI"]


class ApiError(LedgerError):
    """A ``/v1`` route answered with an error status.

    Attributes:
        status: the HTTP status (401 unknown key, 403 scope/agent, 404, 422...).
        detail: the ``detail`` of the JSON error body (string or FastAPI's list of fields).
    """

    def __init__(self, status: int, detail: Any) -> None:
        super().__init__(f"{status}: {detail}")
        self.status = status
        self.detail = detail

    @property
    def message(self) -> str:
        """The detail as one line of text."""
        if isinstance(self.detail, list):
            parts = []
            for item in self.detail:
                if isinstance(item, dict):
                    loc = ".".join(str(p) for p in item.get("loc", ()))
                    parts.append(f"{loc}: {item.get('msg', '')}")
                else:
                    parts.append(str(item))
            return "; ".join(parts)
        return str(self.detail)


def _seg(value: str) -> str:
    return quote(value, safe="")


class LedgerAPI:
    """Calls the running app's ``/v1`` routes in process with the viewer's key.

    Args:
        app: the FastAPI app serving the dashboard (``request.app``).
        key: the raw API key of the viewer (a stored key or the loopback dev key); sent as
            ``Authorization: Bearer`` so the API applies its own scope and agent checks.
        origin: the page request; its client address and the headers that tell where it
            came from (``Host``, ``Origin``, proxy headers) are carried over, so the API
            honours the dev key for exactly the page requests it would honour it for.
        request_id: forwarded as ``X-Request-ID`` so API log lines match the page request.

    Use as an async context manager. Methods return the decoded JSON body and raise
    :class:`ApiError` for any status >= 400.
    """

    def __init__(
        self, app: FastAPI, key: str, *, origin: Request, request_id: str | None = None
    ) -> None:
        self._app = app
        headers = {name: origin.headers[name] for name in ORIGIN_HEADERS if name in origin.headers}
        headers["Authorization"] = f"Bearer {key}"
        if request_id:
            headers["X-Request-ID"] = request_id
        peer = (origin.client.host, origin.client.port) if origin.client else ("", 0)
        self._http = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app, client=peer),
            base_url="http://agentledger.internal",
            headers=headers,
        )

    async def __aenter__(self) -> LedgerAPI:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Release the in-process client."""
        await self._http.aclose()

    def has_route(self, method: str, path: str) -> bool:
        """Whether the app serves ``method path`` (``path`` as declared, e.g.
        ``/v1/agents/{agent}/baseline``), read from the app's own OpenAPI schema (FastAPI
        builds it once and caches it; included routers are not flattened into ``app.routes``
        in every FastAPI version)."""
        paths = self._app.openapi().get("paths", {})
        return method.lower() in paths.get(path, {})

    async def _call(
        self, method: str, path: str, *, params: dict[str, Any] | None = None, body: Any = None
    ) -> Any:
        clean = {k: v for k, v in (params or {}).items() if v is not None}
        content = orjson.dumps(body) if body is not None else None
        headers = {"Content-Type": "application/json"} if content is not None else None
        response = await self._http.request(
            method, path, params=clean, content=content, headers=headers
        )
        try:
            payload = orjson.loads(response.content) if response.content else None
        except orjson.JSONDecodeError:
            payload = None
        if response.status_code >= 400:
            detail = payload.get("detail") if isinstance(payload, dict) else response.text
            raise ApiError(response.status_code, detail)
        return payload

    async def agents(self) -> list[dict[str, Any]]:
        """GET ``/v1/agents``."""
        result: list[dict[str, Any]] = await self._call("GET", "/v1/agents")
        return result

    async def sessions(self, *, agent: str | None, limit: int) -> list[dict[str, Any]]:
        """GET ``/v1/sessions``: most recently ended first."""
        result: list[dict[str, Any]] = await self._call(
            "GET", "/v1/sessions", params={"agent": agent, "limit": limit}
        )
        return result

    async def session_events(
        self, session_id: str, *, agent: str | None, limit: int
    ) -> list[dict[str, Any]]:
        """GET ``/v1/sessions/{sid}/events``: the replay, oldest first."""
        result = await self._call(
            "GET",
            f"/v1/sessions/{_seg(session_id)}/events",
            params={"agent": agent, "limit": limit},
        )
        events: list[dict[str, Any]] = result["events"]
        return events

    async def event(self, event_id: str) -> dict[str, Any]:
        """GET ``/v1/events/{id}``."""
        result: dict[str, Any] = await self._call("GET", f"/v1/events/{_seg(event_id)}")
        return result

    async def why(self, event_id: str, *, depth: int, limit: int) -> dict[str, Any]:
        """GET ``/v1/events/{id}/why``: the causes as a DAG (``chain`` root causes first, this
        event last; ``edges``, ``missing``, ``cut_at``)."""
        result: dict[str, Any] = await self._call(
            "GET", f"/v1/events/{_seg(event_id)}/why", params={"depth": depth, "limit": limit}
        )
        return result

    async def decision(self, event_id: str) -> dict[str, Any]:
        """GET ``/v1/events/{id}/decision``: the model call behind the event and its inputs,
        the tool results it read, the human approvals of its turn, the state at its time."""
        result: dict[str, Any] = await self._call("GET", f"/v1/events/{_seg(event_id)}/decision")
        return result

    async def impact(self, event_id: str, *, depth: int, limit: int) -> dict[str, Any]:
        """GET ``/v1/events/{id}/impact``: the effects as a DAG (``events`` causes first,
        ``edges``, ``cut_at``)."""
        result: dict[str, Any] = await self._call(
            "GET",
            f"/v1/events/{_seg(event_id)}/impact",
            params={"depth": depth, "limit": limit},
        )
        return result

    async def verify_chain(self, agent: str) -> dict[str, Any]:
        """GET ``/v1/events/chain``: the agent's hash-chain verification report."""
        result: dict[str, Any] = await self._call(
            "GET", "/v1/events/chain", params={"agent": agent}
        )
        return result

    @property
    def can_search(self) -> bool:
        """``POST /v1/search`` is mounted (query features)."""
        return self.has_route("POST", "/v1/search")

    async def search(self, query: str, *, agent: str | None, limit: int) -> dict[str, Any]:
        """POST ``/v1/search`` in keyword mode (needs no embeddings)."""
        body: dict[str, Any] = {"query": query, "limit": limit, "mode": "keyword"}
        if agent:
            body["agent"] = agent
        result: dict[str, Any] = await self._call("POST", "/v1/search", body=body)
        return result

    @property
    def can_baseline(self) -> bool:
        """``GET /v1/agents/{agent}/baseline`` is mounted (query features)."""
        return self.has_route("GET", "/v1/agents/{agent}/baseline")

    async def baseline(self, agent: str, *, recent_window: int | None = None) -> dict[str, Any]:
        """GET ``/v1/agents/{agent}/baseline``: the last ``recent_window`` sessions against the
        earlier ones (the route's default when ``None``)."""
        result: dict[str, Any] = await self._call(
            "GET",
            f"/v1/agents/{_seg(agent)}/baseline",
            params={"recent_window": recent_window},
        )
        return result
