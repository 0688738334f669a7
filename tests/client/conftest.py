"""Helpers of the client suite: the sync/async twin switch, fault transports, read-back.

Faults are injected as httpx transports wrapping a real ``httpx.HTTPTransport`` to the real
server, or as small real servers (a slow proxy); nothing of ours is mocked.
"""

from __future__ import annotations

import http.server
import inspect
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from agentledger.client import AsyncLedger, Ledger


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test of this folder ``client``."""
    for item in items:
        if "tests/client" in str(item.fspath):
            item.add_marker(pytest.mark.client)


async def maybe(value: Any) -> Any:
    """Await ``value`` when it is awaitable (async twin), else return it (sync twin)."""
    if inspect.isawaitable(value):
        return await value
    return value


@dataclass
class Twin:
    """Build and drive either twin with one test body."""

    kind: str  # "sync" | "async"

    def make(self, url: str, api_key: str, agent: str | None, **kwargs: Any) -> Any:
        sender = kwargs.pop("fault", None)
        if self.kind == "sync":
            return Ledger(url, api_key, agent, sender_transport=sender, **kwargs)
        return AsyncLedger(url, api_key, agent, sender_transport=sender, **kwargs)

    async def flush(self, client: Any, timeout_s: float) -> Any:
        return await maybe(client.flush(timeout_s))

    async def close(self, client: Any, timeout_s: float | None = None) -> Any:
        if self.kind == "sync":
            return client.close(timeout_s)
        return await client.aclose(timeout_s)


@pytest.fixture(params=["sync", "async"])
def twin(request: pytest.FixtureRequest) -> Twin:
    """Run the test once with :class:`Ledger` and once with :class:`AsyncLedger`."""
    return Twin(request.param)


def stored_events(url: str, api_key: str, agent: str) -> list[dict[str, Any]]:
    """Every stored event of ``agent``, oldest first, read back over the HTTP export route."""
    response = httpx.get(
        f"{url}/v1/events/export",
        params={"agent": agent},
        headers={"Authorization": f"Bearer {api_key}"},
        timeout=30.0,
    )
    response.raise_for_status()
    return [orjson.loads(line) for line in response.content.splitlines() if line.strip()]


def chain_report(url: str, api_key: str, agent: str) -> dict[str, Any]:
    """``GET /v1/events/chain`` for ``agent``."""
    response = httpx.get(
        f"{url}/v1/events/chain",
        params={"agent": agent},
        headers={"Authorization": f"Bearer {api_key}"},
        timeout=60.0,
    )
    response.raise_for_status()
    result: dict[str, Any] = response.json()
    return result


class FaultTransport(httpx.BaseTransport):
    """A real ``HTTPTransport`` with programmable faults on batch requests.

    Args:
        fault: called with the 1-based number of the batch request; returns ``None`` (pass
            through), ``"raise_before"`` (connection error, request never sent),
            ``"raise_after"`` (the request reached the server, the response is lost),
            ``"twice"`` (send the same request twice, return the second answer), or an
            ``httpx.Response`` to answer without reaching the server.
    """

    def __init__(self, fault: Callable[[int], Any]) -> None:
        self._inner = httpx.HTTPTransport()
        self._fault = fault
        self.batches = 0
        self.bodies: list[bytes] = []
        self._lock = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if not request.url.path.endswith("/events/batch"):
            return self._inner.handle_request(request)
        with self._lock:
            self.batches += 1
            number = self.batches
        body = request.read()
        self.bodies.append(body)
        action = self._fault(number)
        if action == "raise_before":
            raise httpx.ConnectError("injected: connection refused", request=request)
        if isinstance(action, httpx.Response):
            action.request = request
            return action
        response = self._inner.handle_request(request)
        if action == "raise_after":
            response.read()
            response.close()
            raise httpx.ReadError("injected: connection reset after send", request=request)
        if action == "twice":
            response.read()
            response.close()
            return self._inner.handle_request(request)
        return response

    def close(self) -> None:
        self._inner.close()


class SlowProxy:
    """A small real HTTP server that sleeps ``delay_s`` per request, then forwards it to
    ``upstream`` (field case H18)."""

    def __init__(self, upstream: str, delay_s: float) -> None:
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                time.sleep(proxy.delay_s)
                headers = {
                    k: v
                    for k, v in self.headers.items()
                    if k.lower() not in {"host", "content-length", "connection"}
                }
                response = httpx.request(
                    self.command, upstream + self.path, content=body, headers=headers, timeout=30
                )
                self.send_response(response.status_code)
                self.send_header("Content-Type", response.headers.get("content-type", ""))
                self.send_header("Content-Length", str(len(response.content)))
                self.end_headers()
                self.wfile.write(response.content)
                proxy.requests += 1

            do_GET = _forward
            do_POST = _forward
            do_DELETE = _forward

        self.delay_s = delay_s
        self.requests = 0
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> SlowProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def spill_dir(tmp_path: Path) -> Path:
    """A fresh spill directory per test."""
    path = tmp_path / "spill"
    path.mkdir()
    return path


@pytest.fixture
def closed_url() -> Iterator[str]:
    """A loopback URL where nothing listens."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    yield f"http://127.0.0.1:{port}"
