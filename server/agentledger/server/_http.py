"""HTTP plumbing: strict JSON parsing, fast JSON responses, request ids.

* :class:`StrictJSONRoute` parses request bodies with orjson, which follows RFC 8259 strictly:
  ``NaN``/``Infinity``, lone surrogates, invalid UTF-8 and nesting deeper than 1024 are
  rejected. ``orjson.JSONDecodeError`` subclasses ``json.JSONDecodeError``, so FastAPI answers
  them with its usual 422 ``json_invalid`` detail, never a 500. orjson reads an integer beyond
  the 64-bit range as a float; a body that may hold one (a run of 19 or more digits as a
  number) is read again by the standard library, which keeps integers exact, so the limit on
  integers (``_canonical``) sees and refuses them instead of storing a float.
* :func:`json_response` serializes with orjson (no response-model re-validation on hot routes).
* :class:`RequestIdMiddleware` puts ``X-Request-ID`` on every response (the caller's, if it
  sent a sane one, else a fresh UUID4 hex).
* :class:`NulGuardMiddleware` answers 422 naming the parameter when a path or query parameter
  holds U+0000, which no store can keep as text (PostgreSQL rejects it outright).
"""

from __future__ import annotations

import contextlib
import json
import re
import uuid
from collections.abc import Callable, Coroutine
from typing import Any
from urllib.parse import parse_qsl

import orjson
from fastapi import Request, Response
from fastapi.routing import APIRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "NulGuardMiddleware",
    "RequestIdMiddleware",
    "StrictJSONRoute",
    "json_response",
    "parse_body",
]

_SANE_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
# A number of 19 digits or more may lie beyond 64 bits, where orjson gives a float. Such a
# number holds a run of 19 digits: every digit mapped to "0" and every other byte to " ", the
# body holds nineteen "0" in a row. Runs inside strings (or a float's long fraction) match too,
# which only costs the slower exact reading. Two C passes: several times cheaper than a regex
# over the body, which cost more than parsing it.
_DIGITS_AS_ZERO = bytes(48 if 48 <= byte <= 57 else 32 for byte in range(256))
_NINETEEN_DIGITS = b"0" * 19


def _may_hold_long_integer(body: bytes) -> bool:
    return _NINETEEN_DIGITS in body.translate(_DIGITS_AS_ZERO)


def parse_body(body: bytes) -> Any:
    """Strict JSON (orjson) with every integer exact, however long (see module docstring)."""
    value = orjson.loads(body)
    if _may_hold_long_integer(body):
        # Valid strict JSON already: only the integers differ. Nested too deep for the standard
        # library, it is far beyond the depth limit, which refuses it anyway.
        with contextlib.suppress(RecursionError):
            value = json.loads(body)
    return value


class _StrictJSONRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = parse_body(await self.body())
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


class NulGuardMiddleware:
    """Pure ASGI middleware: a U+0000 in the path or a query parameter is a 422, not a 500.

    The detail has FastAPI's validation shape: ``[{"loc": ["query", NAME], "msg", "type"}]``.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            loc = self._nul_location(scope)
            if loc is not None:
                body = orjson.dumps(
                    {
                        "detail": [
                            {
                                "loc": list(loc),
                                "msg": "NUL characters (U+0000) are not allowed",
                                "type": "value_error",
                            }
                        ]
                    }
                )
                await send(
                    {
                        "type": "http.response.start",
                        "status": 422,
                        "headers": [(b"content-type", b"application/json")],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)

    @staticmethod
    def _nul_location(scope: Scope) -> tuple[str, str] | None:
        if "\x00" in scope.get("path", ""):
            return ("path", scope["path"].split("\x00", 1)[0].rsplit("/", 1)[-1] or "path")
        query: bytes = scope.get("query_string", b"")
        if b"%00" in query.lower() or b"\x00" in query:
            text = query.decode("latin-1")
            for name, value in parse_qsl(text, keep_blank_values=True):
                if "\x00" in name or "\x00" in value:
                    return ("query", name.replace("\x00", ""))
            return ("query", "")
        return None
