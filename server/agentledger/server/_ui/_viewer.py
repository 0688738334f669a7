"""Who is looking at the dashboard, and with which key: a bearer header, the login cookie, or
the dev key (a loopback bind, and a local request as ``_loopback`` decides). The key is
checked by the API the pages call, never here.

Design: ``docs/design/server-dashboard.md`` ("Who is looking").
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from fastapi import Request

from agentledger.server._loopback import dev_key_refusal

__all__ = ["COOKIE", "Viewer", "safe_next", "viewer_for"]

#: Name of the cookie that holds the key entered on the login page.
COOKIE = "agentledger_ui_key"


@dataclass(frozen=True, slots=True)
class Viewer:
    """The key a page request reads with, and where it came from.

    Attributes:
        key: the raw key (``None``: nothing usable, the login page is shown).
        source: ``"header"``, ``"cookie"``, ``"dev"`` (loopback, no login) or ``"none"``.
    """

    key: str | None
    source: str

    @property
    def can_logout(self) -> bool:
        """The key came from the login cookie."""
        return self.source == "cookie"


def _bearer(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return None


def viewer_for(request: Request) -> Viewer:
    """The key of a page request (see the module docstring for the order)."""
    bearer = _bearer(request)
    if bearer:
        return Viewer(bearer, "header")
    cookie = request.cookies.get(COOKIE)
    if cookie:
        return Viewer(cookie, "cookie")
    dev_key: str | None = request.app.state.dev_key
    if dev_key and dev_key_refusal(request) is None:
        return Viewer(dev_key, "dev")
    return Viewer(None, "none")


def safe_next(target: str | None) -> str:
    """``target`` if it is a dashboard path on this server, else ``/ui/`` (no open redirect)."""
    if not target:
        return "/ui/"
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not parts.path.startswith("/ui/") or "\\" in target:
        return "/ui/"
    return target
