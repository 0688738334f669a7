"""The one error tree of the client: :class:`LedgerError` at the root, then
:class:`ConfigurationError`, :class:`TransportError` and :class:`APIStatusError` with one
subclass per HTTP status family. httpx exceptions are mapped here and never reach the caller;
only reads raise, ``log()`` never does. The tree: docs/design/client-errors.md.
"""

from __future__ import annotations

import datetime as _dt
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from agentledger.protocol.errors import LedgerError

__all__ = [
    "APIStatusError",
    "AuthenticationError",
    "ConfigurationError",
    "ConflictError",
    "LedgerError",
    "NotFoundError",
    "PermissionDeniedError",
    "RateLimitError",
    "ServerError",
    "TransportError",
    "UnprocessableEntityError",
    "parse_retry_after",
    "status_error_from_response",
    "transport_error_from",
]


class ConfigurationError(LedgerError, ValueError):
    """A constructor argument or environment variable is missing or invalid."""


class TransportError(LedgerError):
    """The request got no HTTP answer (connection refused, timeout, broken connection).

    Attributes:
        method, url: the request that failed.
    """

    def __init__(self, message: str, *, method: str = "", url: str = "") -> None:
        super().__init__(message)
        self.method = method
        self.url = url


class APIStatusError(LedgerError):
    """The server answered with an error status.

    Attributes:
        status_code: the HTTP status (int).
        detail: the ``detail`` member of the JSON error body (str, or the list of bad
            fields for 422), or the raw body text when it is not JSON.
        request_id: the ``X-Request-ID`` response header, or ``None``.
    """

    def __init__(
        self, message: str, *, status_code: int, detail: Any, request_id: str | None
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.detail = detail
        self.request_id = request_id


class AuthenticationError(APIStatusError):
    """401: the API key is missing or unknown."""


class PermissionDeniedError(APIStatusError):
    """403: the key is valid but lacks the scope or the agent."""


class NotFoundError(APIStatusError):
    """404: no such resource."""


class ConflictError(APIStatusError):
    """409: an idempotency key was reused with a different body."""


class UnprocessableEntityError(APIStatusError):
    """422: the request had a bad field; ``detail`` names it."""


class RateLimitError(APIStatusError):
    """429: too many requests. ``retry_after_s`` is the server's ``Retry-After`` (seconds)."""

    def __init__(
        self,
        message: str,
        *,
        status_code: int,
        detail: Any,
        request_id: str | None,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(message, status_code=status_code, detail=detail, request_id=request_id)
        self.retry_after_s = retry_after_s


class ServerError(APIStatusError):
    """5xx: the server failed to handle a valid request."""


_BY_STATUS: dict[int, type[APIStatusError]] = {
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    422: UnprocessableEntityError,
    429: RateLimitError,
}


def _detail(response: httpx.Response) -> Any:
    try:
        body = response.json()
    except ValueError:
        return response.text
    if isinstance(body, dict) and "detail" in body:
        return body["detail"]
    return body


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (RFC 9110 §10.2.3: delta-seconds or HTTP-date)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    now = _dt.datetime.now(when.tzinfo or _dt.UTC)
    return max(0.0, (when - now).total_seconds())


def status_error_from_response(response: httpx.Response) -> APIStatusError:
    """Map an error response (status >= 400) to the matching :class:`APIStatusError`."""
    status = response.status_code
    detail = _detail(response)
    request_id = response.headers.get("x-request-id")
    message = f"{response.request.method} {response.request.url.path} -> {status}: {detail}"
    if status == 429:
        return RateLimitError(
            message,
            status_code=status,
            detail=detail,
            request_id=request_id,
            retry_after_s=parse_retry_after(response.headers.get("retry-after")),
        )
    cls = _BY_STATUS.get(status, ServerError if status >= 500 else APIStatusError)
    return cls(message, status_code=status, detail=detail, request_id=request_id)


def transport_error_from(error: httpx.TransportError) -> TransportError:
    """Map an httpx transport exception to :class:`TransportError`."""
    try:
        request = error.request
        method, url = request.method, str(request.url)
    except RuntimeError:
        method, url = "", ""
    kind = type(error).__name__
    return TransportError(f"{kind}: {error} ({method} {url})".strip(), method=method, url=url)
