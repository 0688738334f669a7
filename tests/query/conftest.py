"""Fixtures of the query-feature suite.

* ``query_client``: an ``httpx.AsyncClient`` on the app in-process (ASGI transport, with the
  app's lifespan running, so the background indexer works as in ``agentledger serve``),
  parametrised over the stores by ``store_kind`` (``tests/conftest.py``): ``sqlite`` always,
  ``postgres`` when ``AGENTLEDGER_TEST_POSTGRES_DSN`` names a database (marked ``postgres``).
  Tests isolate by unique agent names, so one PostgreSQL database serves the whole suite.
* ``embeddings_server``: a small real HTTP server on loopback speaking the OpenAI
  ``POST /v1/embeddings`` shape with deterministic vectors (hashed bag of words, 64 dims), so
  texts sharing words are close; it counts requests and can be told to fail.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from _stores import postgres_database
from agentledger.server import Settings, create_app

QUERY_KEY = "query-test-key"
DIM = 64

pytestmark = pytest.mark.server


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/query/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.server)


@pytest.fixture(scope="session")
def query_pg_database(pg_admin_dsn: str) -> Iterator[str]:
    """A throw-away PostgreSQL database for the whole query suite (dropped at the end); tests
    isolate inside it by unique agent names."""
    with postgres_database(pg_admin_dsn, prefix="agentledger_q") as url:
        yield url


def store_url(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """The ``--db`` value for a store kind (skips ``postgres`` without a DSN)."""
    if kind == "postgres":
        url: str = request.getfixturevalue("query_pg_database")
        return url
    return str(tmp_path / "query.db")


@pytest.fixture
def query_db(store_kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    return store_url(store_kind, tmp_path, request)


@pytest.fixture
async def query_client(query_db: str) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(Settings(db=query_db, dev_key=QUERY_KEY))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(
            transport=transport,
            base_url="http://localhost",
            headers={"Authorization": f"Bearer {QUERY_KEY}"},
            timeout=30,
        ) as client:
            yield client


def bag_of_words(text: str) -> list[float]:
    """A deterministic unit vector: each lowercase word hashed into one of ``DIM`` slots."""
    vector = np.zeros(DIM, dtype=np.float64)
    for word in re.findall(r"\w+", text.lower()):
        slot = int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "big") % DIM
        vector[slot] += 1.0
    norm = float(np.linalg.norm(vector))
    return (vector / norm if norm else vector).tolist()


@dataclass
class EmbeddingsServer:
    """The fake endpoint's handle."""

    url: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    fail_with: int | None = None


@pytest.fixture
def embeddings_server() -> Iterator[EmbeddingsServer]:
    """A real HTTP ``/v1/embeddings`` server on 127.0.0.1 (stopped after the test)."""
    handle = EmbeddingsServer(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            handle.requests.append(body)
            if self.path != "/v1/embeddings" or handle.fail_with is not None:
                self.send_response(handle.fail_with or 404)
                self.end_headers()
                return
            inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
            answer = {
                "object": "list",
                "model": body["model"],
                "data": [
                    {"object": "embedding", "index": i, "embedding": bag_of_words(text)}
                    for i, text in enumerate(inputs)
                ],
            }
            payload = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    handle.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield handle
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
