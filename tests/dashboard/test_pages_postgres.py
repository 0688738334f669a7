"""The dashboard page suite again, on a server whose store is PostgreSQL.

The pages read only through the ``/v1`` API, so they must show the same on either store. Needs
``AGENTLEDGER_TEST_POSTGRES_DSN`` (see ``tests/_stores.py``): skips without it, fails in CI
if PostgreSQL is unreachable. Tests that edit the SQLite file or never start a server are not
repeated.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from _servers import ServerFactory
from _stores import check_postgres, postgres_database, require_postgres

from . import test_pages as suite

pytestmark = [pytest.mark.postgres, pytest.mark.server]

_NOT_REPEATED = {
    "test_agent_page_reports_a_broken_chain",  # edits the SQLite file directly
    "test_without_jinja2_the_server_runs_and_ui_says_what_to_install",  # no store involved
}


@pytest.fixture(scope="module")
def ledger_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One real ``agentledger serve`` on a throw-away PostgreSQL database for this module."""
    with postgres_database(check_postgres(require_postgres())) as url:
        factory = ServerFactory(tmp_path_factory.mktemp("pg-dashboard"))
        try:
            yield factory(db=url)
        finally:
            factory.stop_all()


for _name, _test in vars(suite).items():
    if _name.startswith("test_") and callable(_test) and _name not in _NOT_REPEATED:
        globals()[_name] = _test
