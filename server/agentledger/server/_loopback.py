"""Whether a request is a local dev session, the only kind the dev key is honoured for.

A loopback bind alone does not make a request local: a web page on another site can reach a
loopback port through DNS rebinding (its own name resolving to 127.0.0.1, its own name in the
``Host`` header), and a forwarder can relay other machines to it. So, like Jupyter and Vite,
the dev key (and the dashboard's login-free access) needs all of:

* the TCP peer is a loopback address;
* the ``Host`` header names a loopback host: ``localhost``, ``127.x.y.z`` or ``[::1]``, any port;
* an ``Origin`` header, when sent, names a loopback host too (a browser on another site);
* no proxy header (``Forwarded``, ``X-Forwarded-For``, ``X-Forwarded-Host``, ``X-Real-IP``):
  the request was relayed for someone else.

What cannot be seen stays possible: a plain TCP forwarder that exposes the port to other
machines, with callers who write ``Host: localhost`` themselves. A server reachable that way
needs real keys, not a dev key.

Design: ``docs/design/server-dashboard.md`` ("Who is looking").
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit

from starlette.requests import HTTPConnection

from agentledger.server._settings import is_loopback

__all__ = ["ORIGIN_HEADERS", "dev_key_refusal", "local_refusal"]

_PROXY_HEADERS = ("forwarded", "x-forwarded-for", "x-forwarded-host", "x-real-ip")
#: Headers that decide the question; the dashboard's in-process API calls carry them over.
ORIGIN_HEADERS = ("host", "origin", *_PROXY_HEADERS)

_EXPECTED = "localhost, 127.0.0.1 or [::1] (any port)"


def _host_of(value: str) -> str | None:
    try:
        return urlsplit("//" + value.strip()).hostname
    except ValueError:
        return None


def local_refusal(headers: Mapping[str, str], peer: str | None) -> str | None:
    """Why a request with these headers from TCP peer ``peer`` is not local; ``None`` if it is.

    Args:
        headers: the request headers (names in lowercase, as Starlette gives them).
        peer: the client address of the connection (``None`` when unknown).

    Returns:
        A sentence naming the header (or the peer) and what was expected.
    """
    if peer is None or not is_loopback(peer):
        return f"the request comes from {peer or 'an unknown address'}, not from this machine"
    host = headers.get("host")
    if not host:
        return f"the Host header is missing; expected {_EXPECTED}"
    name = _host_of(host)
    if name is None or not is_loopback(name):
        return f"the Host header is {host!r}; expected {_EXPECTED}"
    origin = headers.get("origin")
    if origin is not None:
        origin_host = urlsplit(origin).hostname if "://" in origin else None
        if origin_host is None or not is_loopback(origin_host):
            return f"the Origin header is {origin!r}; expected a page on {_EXPECTED}"
    for header in _PROXY_HEADERS:
        if header in headers:
            return f"the request carries a {header} header (it was relayed by a proxy)"
    return None


def dev_key_refusal(connection: HTTPConnection) -> str | None:
    """:func:`local_refusal` of a Starlette request."""
    peer = connection.client.host if connection.client else None
    return local_refusal(connection.headers, peer)
