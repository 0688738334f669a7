"""Schemathesis against the app on PostgreSQL: no generated input produces a 5xx.

PostgreSQL refuses things SQLite stores (U+0000 in text, for one), so the fuzzing runs on
both stores. The database is created when the module is collected (the schema needs the app)
and dropped when the module's tests end.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from _stores import postgres_admin_dsn, postgres_database
from agentledger.server import Settings, create_app
from agentledger.server._auth import new_key

_DSN = postgres_admin_dsn()
if _DSN is None:
    pytest.skip(
        "needs AGENTLEDGER_TEST_POSTGRES_DSN (see tests/_stores.py)", allow_module_level=True
    )
_DATABASE = contextlib.ExitStack()
_URL = _DATABASE.enter_context(postgres_database(_DSN))
app = create_app(Settings(db=_URL, max_body_bytes=256_000))
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
    _DATABASE.close()


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=EXAMPLES <= 30,  # a long local hunt explores new inputs each run
)
def test_no_server_errors_on_postgres(case: Any) -> None:
    response = case.call(headers={"Authorization": f"Bearer {KEY}"})
    assert response.status_code < 500, (case.method, case.path, response.text)
