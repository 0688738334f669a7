"""Who is looking at the dashboard, and with which key: a bearer header, the login cookie, or
the dev key. The dev key needs a dev session: a loopback bind, a local request as
``_loopback`` decides, and the dev-session cookie a browser gets by opening the link
``agentledger serve`` prints (``/ui/?token=...``; the token is random per start). A plain TCP
forwarder can make a remote request look local, but it cannot show the remote side the
server's console. The key is checked by the API the pages call, never here.

Design: ``docs/design/server-dashboard.md`` ("Who is looking").
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from urllib.parse import urlsplit

from fastapi import Request

from agentledger.server._loopback import dev_key_refusal

__all__ = ["COOKIE", "DEV_COOKIE", "Viewer", "dev_token_matches", "safe_next", "viewer_for"]

#: Name of the cookie that holds the key entered on the login page.
COOKIE = "agentledger_ui_key"
#: Name of the cookie that holds the dev-session token (see the module docstring).
DEV_COOKIE = "agentledger_ui_dev"


def dev_token_matches(request: Request, token: str | None) -> bool:
    """Whether ``token`` is this server's dev-session token (dev key honoured, local request)."""
    expected: str | None = getattr(request.app.state, "dashboard_token", None)
    if not expected or not token or dev_key_refusal(request) is not None:
        return False
    return hmac.compare_digest(expected.encode(), token.encode())


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
    if dev_key and dev_token_matches(request, request.cookies.get(DEV_COOKIE)):
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
