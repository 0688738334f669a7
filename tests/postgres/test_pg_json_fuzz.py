"""Hypothesis-generated JSON bodies against the app on PostgreSQL, which refuses what SQLite
keeps (U+0000 in text, for one): no 5xx, refusals write nothing, accepted events read back and
verify intact. Strategies: ``tests/server/_json_fuzz.py``."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from hypothesis import given

from _stores import postgres_database, require_postgres
from agentledger.server import Settings, create_app
from agentledger.server._auth import new_key

sys.path.insert(0, str(Path(__file__).parent.parent / "server"))
from _json_fuzz import FUZZ_SETTINGS, FuzzedBody, bodies, check_request


@pytest.fixture(scope="module")
def fuzz_client() -> Iterator[tuple[TestClient, dict[str, str]]]:
    with postgres_database(require_postgres()) as url:
        app = create_app(Settings(db=url, max_body_bytes=512_000))
        key, record = new_key(name="fuzz", agent=None, scope="read_write", expires_in_days=None)
        app.state.store.create_key(record)
        with TestClient(app) as client:
            yield client, {"Authorization": f"Bearer {key}"}
        app.state.store.close()


@given(body=bodies())
@FUZZ_SETTINGS
def test_fuzzed_json_bodies_never_500_on_postgres(
    fuzz_client: tuple[TestClient, dict[str, str]], body: FuzzedBody
) -> None:
    client, headers = fuzz_client
    check_request(client, headers, body)
