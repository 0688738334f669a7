"""Hypothesis-generated JSON bodies (deep nesting, huge numbers, lone surrogates, U+0000,
duplicate keys, long strings) against the app on SQLite: no 5xx, refusals write nothing,
accepted events read back and verify intact. Strategies: ``tests/server/_json_fuzz.py``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from _json_fuzz import FUZZ_SETTINGS, FuzzedBody, bodies, check_request
from fastapi.testclient import TestClient
from hypothesis import given

from agentledger.server import Settings, create_app
from agentledger.server._auth import new_key


@pytest.fixture(scope="module")
def fuzz_client(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[TestClient, dict[str, str]]]:
    db = tmp_path_factory.mktemp("json-fuzz") / "fuzz.db"
    app = create_app(Settings(db=str(db), max_body_bytes=512_000))
    key, record = new_key(name="fuzz", agent=None, scope="read_write", expires_in_days=None)
    app.state.store.create_key(record)
    with TestClient(app) as client:
        yield client, {"Authorization": f"Bearer {key}"}
    app.state.store.close()


@given(body=bodies())
@FUZZ_SETTINGS
def test_fuzzed_json_bodies_never_500(
    fuzz_client: tuple[TestClient, dict[str, str]], body: FuzzedBody
) -> None:
    client, headers = fuzz_client
    check_request(client, headers, body)
