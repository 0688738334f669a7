"""The dev key is honoured only for a request from this machine to a loopback host name.

A loopback bind is not enough: a page on another site reaches a loopback port through DNS
rebinding (its own name in ``Host``), and a forwarder relays other machines. Real servers, real
sockets; the non-loopback peer comes from a client socket bound to one of this machine's other
addresses and connected to 127.0.0.1, which is what the server sees from a forwarder on another
interface or from another machine.
"""

from __future__ import annotations

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


def _get(server: Any, path: str, host: str, **headers: str) -> httpx.Response:
    return httpx.get(f"{server.url}{path}", headers={"Host": host, **headers}, timeout=30.0)


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
        assert _get(server, "/ui/", f"localhost:{server.port}", **headers).status_code == 303


def test_dev_key_with_a_loopback_host_is_accepted(server_factory: Any, store_db: str) -> None:
    server = server_factory(db=store_db)
    for host in (f"localhost:{server.port}", f"127.0.0.1:{server.port}", "localhost"):
        assert _get(server, "/v1/agents", host, **server.headers()).status_code == 200, host
        page = _get(server, "/ui/", host)
        assert page.status_code == 200 and "/ui/login" not in page.headers.get("location", "")


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
