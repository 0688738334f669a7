"""Fixtures shared by every suite.

* ``ledger_server``: a real ``agentledger serve`` (the console script) on a free loopback port
  with a fresh SQLite file, started once per test session.
* ``server_factory``: start extra servers (own DB, own options) that are stopped after the test;
  they can be killed (SIGKILL) and restarted on the same port and file for chaos tests.
* ``internal_errors_are_loud`` (autouse): fails a test when any guarded callback swallowed an
  exception (records at ERROR on the ``agentledger`` logger that carry a traceback).
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("ZIZKADB_TELEMETRY", "false")
os.environ.setdefault("ZIZKADB_QUIET", "1")

from _servers import (
    DEV_KEY,
    ServerFactory,
    ServerProcess,
    agentledger_executable,
    free_port,
)

__all__ = ["DEV_KEY", "ServerFactory", "ServerProcess", "agentledger_executable", "free_port"]


@pytest.fixture(scope="session")
def ledger_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One real server for the whole test session; tests isolate by unique agent names."""
    factory = ServerFactory(tmp_path_factory.mktemp("ledger-server"))
    server = factory()
    yield server
    factory.stop_all()


@pytest.fixture
def server_factory(tmp_path: Path) -> Iterator[ServerFactory]:
    """Start servers of the test's own; all are stopped when the test ends."""
    factory = ServerFactory(tmp_path)
    yield factory
    factory.stop_all()


@pytest.fixture
def agent_name(request: pytest.FixtureRequest) -> str:
    """A unique, valid agent name per test."""
    base = "".join(c if c.isalnum() else "-" for c in request.node.name)[:60].strip("-")
    return f"{base or 'agent'}-{uuid.uuid4().hex[:8]}"


class _InternalErrorCollector(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info:
            self.records.append(record)


@pytest.fixture(autouse=True)
def internal_errors_are_loud(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail the test if a guard swallowed an exception (the library never breaks the host, but
    the suite must see what it swallowed).

    A test that provokes an internal error on purpose marks itself
    ``@pytest.mark.allow_internal_errors``.
    """
    collector = _InternalErrorCollector()
    log = logging.getLogger("agentledger")
    log.addHandler(collector)
    try:
        yield
    finally:
        log.removeHandler(collector)
    if collector.records and not request.node.get_closest_marker("allow_internal_errors"):
        first = collector.records[0]
        detail = logging.Formatter().formatException(first.exc_info) if first.exc_info else ""
        pytest.fail(
            f"{len(collector.records)} internal error(s) swallowed by agentledger guards; "
            f"first: {first.getMessage()}\n{detail}"
        )
