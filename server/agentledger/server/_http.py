"""HTTP plumbing: strict JSON parsing, fast JSON responses, request ids.

* :class:`StrictJSONRoute` parses request bodies with orjson, which follows RFC 8259 strictly:
  ``NaN``/``Infinity``, lone surrogates, invalid UTF-8 and nesting deeper than 1024 are
  rejected. ``orjson.JSONDecodeError`` subclasses ``json.JSONDecodeError``, so FastAPI answers
  them with its usual 422 ``json_invalid`` detail, never a 500.
* :func:`json_response` serializes with orjson (no response-model re-validation on hot routes).
* :class:`RequestIdMiddleware` puts ``X-Request-ID`` on every response (the caller's, if it
  sent a sane one, else a fresh UUID4 hex).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Coroutine
from typing import Any

import orjson
from fastapi import Request, Response
from fastapi.routing import APIRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["RequestIdMiddleware", "StrictJSONRoute", "json_response"]

_SANE_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


class _StrictJSONRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = orjson.loads(await self.body())
        return self._json


class StrictJSONRoute(APIRoute):
    """An ``APIRoute`` whose request bodies are parsed by orjson (see module docstring)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def strict_handler(request: Request) -> Response:
            return await handler(_StrictJSONRequest(request.scope, request.receive))

        return strict_handler


def json_response(content: Any, status_code: int = 200) -> Response:
    """A JSON response serialized by orjson."""
    return Response(
        content=orjson.dumps(content), status_code=status_code, media_type="application/json"
    )


class RequestIdMiddleware:
    """Pure ASGI middleware adding ``X-Request-ID`` to every HTTP response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = ""
        for name, value in scope.get("headers", ()):
            if name == b"x-request-id":
                candidate = value.decode("latin-1")
                if _SANE_REQUEST_ID.match(candidate):
                    request_id = candidate
                break
        if not request_id:
            request_id = uuid.uuid4().hex
        scope.setdefault("state", {})["request_id"] = request_id
        header = (b"x-request-id", request_id.encode("ascii"))

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [h for h in message.get("headers", []) if h[0].lower() != b"x-request-id"]
                headers.append(header)
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_id)
