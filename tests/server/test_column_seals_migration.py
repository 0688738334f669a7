"""A ledger written before column seals existed (migration 0006): opening it seals every
stored row once with the server's chain hasher, so old chains keep verifying, and an edit of
``received_at`` or ``importance`` after the upgrade is reported at its event."""

from __future__ import annotations

import pytest

from _migrations import alembic, verify_agent
from agentledger.server._chain import ChainReport
from agentledger.server._ingest import now_ts, prepare, validate_item
from agentledger.server._store import open_store
from agentledger.server._store.base import LedgerStore

AGENT = "old-rows"


def _verify(store: LedgerStore) -> ChainReport:
    return verify_agent(store, AGENT)


def _problems(report: ChainReport) -> list[tuple[str, int]]:
    return [(p["kind"], p["sequence_no"]) for p in report.problems]


def _edit(store: LedgerStore, change: str, sequence_no: int) -> None:
    with store.engine.begin() as conn:
        conn.exec_driver_sql(
            f"UPDATE events SET {change} WHERE agent = '{AGENT}' AND sequence_no = {sequence_no}"
        )


@pytest.mark.parametrize("chain_key", [None, "seal-key"])
def test_upgrade_seals_the_stored_rows(store_db: str, chain_key: str | None) -> None:
    store = open_store(store_db, chain_key=chain_key)
    raw = [
        {"agent": AGENT, "event": "step", "data": {"i": i}, "importance": i / 10 if i else None}
        for i in range(6)
    ]
    items = [
        prepare(validate_item(r), max_depth=64, patterns=(), received_at=now_ts()) for r in raw
    ]
    assert all(outcome.ok for outcome in store.append(items))
    with store.engine.begin() as conn:
        alembic(conn, "downgrade", "0005")  # the rows as revision 0005 stored them
    store.close()
    store = open_store(store_db, chain_key=chain_key)  # opening upgrades and seals
    try:
        report = _verify(store)
        assert report.intact and report.verified == 6, report.problems
        _edit(store, "importance = 0.9", 3)
        _edit(store, "received_at = '2000-01-01T00:00:00.000000+00:00'", 5)
        assert _problems(_verify(store)) == [("content_changed", 3), ("content_changed", 5)]
    finally:
        store.close()
    store = open_store(store_db, chain_key=chain_key)  # a later open blesses nothing
    try:
        assert _problems(_verify(store)) == [("content_changed", 3), ("content_changed", 5)]
    finally:
        store.close()


def test_downgrade_drops_the_seals(store_db: str) -> None:
    store = open_store(store_db)
    try:
        with store.engine.begin() as conn:
            alembic(conn, "downgrade", "0005")
            columns = conn.exec_driver_sql("SELECT * FROM events LIMIT 0").keys()
        assert "seal" not in columns
    finally:
        store.close()
