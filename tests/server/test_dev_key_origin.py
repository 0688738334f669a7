"""The dev key is honoured only for a request from this machine to a loopback host name.

A loopback bind is not enough: a page on another site reaches a loopback port through DNS
rebinding (its own name in ``Host``), and a forwarder relays other machines. Real servers, real
sockets; the non-loopback peer comes from a client socket bound to one of this machine's other
addresses and connected to 127.0.0.1, which is what the server sees from a forwarder on another
interface or from another machine.
"""

from __future__ import annotations

import re
import socket
from typing import Any

import httpx
import pytest

from agentledger.server._loopback import local_refusal

LOCAL = "127.0.0.1"


@pytest.mark.parametrize(
    ("headers", "peer", "named"),
    [
        ({"host": "localhost"}, LOCAL, None),
        ({"host": "localhost:8080"}, LOCAL, None),
        ({"host": "127.0.0.1:8080"}, "::1", None),
        ({"host": "[::1]:8080"}, LOCAL, None),
        ({"host": "LOCALHOST:1", "origin": "http://localhost:5173"}, LOCAL, None),
        ({"host": "evil.example"}, LOCAL, "Host header is 'evil.example'"),
        ({"host": "evil.example:8080"}, LOCAL, "Host header"),
        ({"host": "localhost.evil.example"}, LOCAL, "Host header"),
        ({"host": "127.0.0.1.nip.io"}, LOCAL, "Host header"),
        ({}, LOCAL, "Host header is missing"),
        ({"host": "localhost"}, "192.0.2.7", "comes from 192.0.2.7"),
        ({"host": "localhost"}, None, "unknown address"),
        ({"host": "localhost", "origin": "http://evil.example"}, LOCAL, "Origin header"),
        ({"host": "localhost", "origin": "null"}, LOCAL, "Origin header"),
        ({"host": "localhost", "x-forwarded-for": "192.0.2.7"}, LOCAL, "x-forwarded-for"),
        ({"host": "localhost", "forwarded": "for=192.0.2.7"}, LOCAL, "forwarded header"),
        ({"host": "localhost", "x-real-ip": "192.0.2.7"}, LOCAL, "x-real-ip"),
    ],
)
def test_the_decision_names_what_gave_the_request_away(
    headers: dict[str, str], peer: str | None, named: str | None
) -> None:
    refusal = local_refusal(headers, peer)
    if named is None:
        assert refusal is None
    else:
        assert refusal is not None and named in refusal


def _get(
    server: Any, path: str, host: str, cookies: dict[str, str] | None = None, **headers: str
) -> httpx.Response:
    return httpx.get(
        f"{server.url}{path}", headers={"Host": host, **headers}, cookies=cookies, timeout=30.0
    )


def test_dev_key_with_a_foreign_host_is_refused_on_api_and_dashboard(
    server_factory: Any, store_db: str
) -> None:
    server = server_factory(db=store_db)
    auth = server.headers()

    api = _get(server, "/v1/agents", "evil.example", **auth)
    assert api.status_code == 403
    detail = api.json()["detail"]
    assert "dev key refused" in detail and "'evil.example'" in detail and "localhost" in detail

    # No key: the dashboard sends the browser to the login form and shows nothing.
    page = _get(server, "/ui/", "evil.example")
    assert page.status_code == 303 and page.headers["location"].startswith("/ui/login")
    # The dev key as a bearer header: the page's own API call is refused the same way.
    page = _get(server, "/ui/", "evil.example", **auth)
    assert page.status_code == 403 and "dev key refused" in page.text

    for headers in ({"Origin": "http://evil.example"}, {"X-Forwarded-For": "192.0.2.7"}):
        relayed = _get(server, "/v1/agents", f"localhost:{server.port}", **auth, **headers)
        assert relayed.status_code == 403, headers
        cookies = server.ui_cookies()
        page = _get(server, "/ui/", f"localhost:{server.port}", cookies, **headers)
        assert page.status_code == 303, headers


def test_dev_key_with_a_loopback_host_is_accepted(server_factory: Any, store_db: str) -> None:
    server = server_factory(db=store_db)
    for host in (f"localhost:{server.port}", f"127.0.0.1:{server.port}", "localhost"):
        assert _get(server, "/v1/agents", host, **server.headers()).status_code == 200, host
        page = _get(server, "/ui/", host, server.ui_cookies())
        assert page.status_code == 200 and "/ui/login" not in page.headers.get("location", "")


def test_the_dashboard_opens_without_a_key_only_through_the_dev_session_link(
    server_factory: Any, store_db: str
) -> None:
    """A plain TCP forwarder makes a remote caller look local (loopback peer, and it may write
    ``Host: 127.0.0.1`` itself); what it cannot give is the token ``serve`` printed on the
    server's console. Without the dev-session cookie the dashboard asks for a key."""
    server = server_factory(db=store_db)
    forwarded = _get(server, "/ui/", "127.0.0.1")
    assert forwarded.status_code == 303 and forwarded.headers["location"].startswith("/ui/login")
    guessed = _get(server, "/ui/", "127.0.0.1", {"agentledger_ui_dev": "guess"})
    assert guessed.status_code == 303 and guessed.headers["location"].startswith("/ui/login")
    wrong_link = _get(server, "/ui/?token=guess", "127.0.0.1")
    assert wrong_link.status_code == 303 and "set-cookie" not in wrong_link.headers

    with httpx.Client(base_url=server.url, timeout=30.0) as browser:
        link = browser.get(f"/ui/sessions/x?agent=a&token={server.dashboard_token}")
        assert link.status_code == 303 and link.headers["location"] == "/ui/sessions/x?agent=a"
        cookie = link.headers["set-cookie"]
        assert "agentledger_ui_dev=" in cookie and "HttpOnly" in cookie
        assert "SameSite=strict" in cookie and "Path=/ui" in cookie
        assert browser.get("/ui/").status_code == 200  # the cookie is the dev session
        # the link works only for local requests: a foreign Host gets no cookie
        foreign = browser.get(
            f"/ui/?token={server.dashboard_token}", headers={"Host": "evil.example"}
        )
        assert foreign.status_code == 303 and "set-cookie" not in foreign.headers


def test_serve_prints_the_dev_session_link(server_factory: Any, tmp_path: Any) -> None:
    """Without ``AGENTLEDGER_DASHBOARD_TOKEN`` each start has a random token; ``serve``
    prints the link that opens the dashboard with it."""
    server = server_factory(env={"AGENTLEDGER_DASHBOARD_TOKEN": ""})
    assert server.log_path is not None
    printed = server.log_path.read_text()
    match = re.search(r"dashboard: (http://\S+/ui/\?token=(\S+))", printed)
    assert match, printed
    assert match.group(2) != server.dashboard_token
    with httpx.Client(timeout=30.0) as browser:
        assert browser.get(match.group(1)).status_code == 303
        assert browser.get(f"{server.url}/ui/").status_code == 200


def test_a_stored_key_works_with_any_host(server_factory: Any, store_db: str) -> None:
    server = server_factory(db=store_db)
    created = httpx.post(
        f"{server.url}/v1/keys",
        json={"name": "remote", "scope": "read_only"},
        headers=server.headers(),
    )
    assert created.status_code == 201, created.text
    auth = {"Authorization": f"Bearer {created.json()['key']}"}
    for host in ("evil.example", "ledger.example.com:443", f"localhost:{server.port}"):
        assert _get(server, "/v1/agents", host, **auth).status_code == 200, host
        assert _get(server, "/ui/", host, **auth).status_code == 200, host


def _other_local_address() -> str | None:
    """One of this machine's IPv4 addresses that is not loopback (the route to TEST-NET-1)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # UDP: nothing is sent
        except OSError:
            return None
        address: str = probe.getsockname()[0]
    return None if address.startswith("127.") or address == "0.0.0.0" else address


def test_a_peer_that_is_not_loopback_gets_no_dev_access(server_factory: Any) -> None:
    address = _other_local_address()
    if address is None:
        pytest.skip("this machine has no IPv4 address besides loopback")
    server = server_factory()
    transport = httpx.HTTPTransport(local_address=address)
    with httpx.Client(transport=transport, base_url=server.url, timeout=30.0) as remote:
        host = {"Host": f"localhost:{server.port}"}  # what a relayed caller may write itself
        api = remote.get("/v1/agents", headers={**host, **server.headers()})
        assert api.status_code == 403
        assert f"comes from {address}" in api.json()["detail"]
        page = remote.get("/ui/", headers=host)
        assert page.status_code == 303 and page.headers["location"].startswith("/ui/login")
