"""Schemathesis against the app's own OpenAPI schema: no input produces a 5xx."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from agentledger.server import Settings, create_app
from agentledger.server._auth import new_key

_DB = Path(tempfile.mkdtemp(prefix="agentledger-schemathesis-")) / "fuzz.db"
app = create_app(Settings(db=str(_DB), max_body_bytes=256_000))
# A stored key: the dev key is refused to the test client, which is no loopback address.
KEY, _record = new_key(name="schemathesis", agent=None, scope="read_write", expires_in_days=None)
app.state.store.create_key(_record)
schema = schemathesis.openapi.from_asgi("/openapi.json", app)
#: Examples per operation; raise with ``AGENTLEDGER_SCHEMATHESIS_EXAMPLES`` for a long local hunt.
EXAMPLES = int(os.environ.get("AGENTLEDGER_SCHEMATHESIS_EXAMPLES", "30"))


@pytest.fixture(scope="module", autouse=True)
def _close_store() -> Iterator[None]:
    yield
    app.state.store.close()


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=EXAMPLES <= 30,  # a long local hunt explores new inputs each run
)
def test_no_server_errors(case: Any) -> None:
    response = case.call(headers={"Authorization": f"Bearer {KEY}"})
    assert response.status_code < 500, (case.method, case.path, response.text)
    assert response.headers.get("x-request-id")
