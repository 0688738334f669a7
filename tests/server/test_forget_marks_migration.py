"""A ledger with tombstones written before forget marks existed (migration 0005): opening it
marks them once with the server's chain hasher, so they still verify as erased, while a NULL
written by hand after the upgrade is reported."""

from __future__ import annotations

import pytest

from _migrations import alembic, verify_agent
from agentledger.server._chain import ChainReport
from agentledger.server._ingest import now_ts, prepare, validate_item
from agentledger.server._store import open_store
from agentledger.server._store.base import LedgerStore

AGENT = "old-forget"


def _verify(store: LedgerStore) -> ChainReport:
    return verify_agent(store, AGENT)


def _erase_by_hand(store: LedgerStore, sequence_no: int, *, like_forget: bool) -> None:
    """Clear a record as forget did before revision 0005 (``like_forget``), or only the
    record (a hand edit)."""
    extra = ", checksum = NULL, fingerprint = NULL, idempotency_key = NULL" if like_forget else ""
    with store.engine.begin() as conn:
        conn.exec_driver_sql(
            f"UPDATE events SET record = NULL{extra} "
            f"WHERE agent = '{AGENT}' AND sequence_no = {sequence_no}"
        )


@pytest.mark.parametrize("chain_key", [None, "migration-key"])
def test_upgrade_marks_old_tombstones(store_db: str, chain_key: str | None) -> None:
    store = open_store(store_db, chain_key=chain_key)
    raw = [{"agent": AGENT, "event": "step", "data": {"i": i}} for i in range(6)]
    items = [
        prepare(validate_item(r), max_depth=64, patterns=(), received_at=now_ts()) for r in raw
    ]
    assert all(outcome.ok for outcome in store.append(items))
    with store.engine.begin() as conn:
        alembic(conn, "downgrade", "0004")
    _erase_by_hand(store, 2, like_forget=True)  # a forget of revision 0004
    store.close()
    store = open_store(store_db, chain_key=chain_key)  # opening upgrades and marks
    try:
        report = _verify(store)
        assert report.intact and report.erased == 1 and report.verified == 6
        _erase_by_hand(store, 4, like_forget=True)  # the same edit after the upgrade
        report = _verify(store)
        assert [(p["kind"], p["sequence_no"]) for p in report.problems] == [("content_changed", 4)]
        assert report.erased == 1
    finally:
        store.close()
    store = open_store(store_db, chain_key=chain_key)  # a later open blesses nothing
    try:
        assert [p["sequence_no"] for p in _verify(store).problems] == [4]
    finally:
        store.close()


def test_downgrade_clears_the_marks(store_db: str) -> None:
    store = open_store(store_db)
    item = prepare(
        validate_item({"agent": AGENT, "event": "step", "data": {}}),
        max_depth=64,
        patterns=(),
        received_at=now_ts(),
    )
    assert store.append([item])[0].ok
    with store.engine.begin() as conn:
        alembic(conn, "downgrade", "0004")
    _erase_by_hand(store, 1, like_forget=True)
    store.close()
    store = open_store(store_db)
    try:
        assert _verify(store).intact and _verify(store).erased == 1
        with store.engine.begin() as conn:
            alembic(conn, "downgrade", "0004")
            marks = conn.exec_driver_sql(
                "SELECT count(*) FROM events WHERE fingerprint IS NOT NULL"
            ).scalar_one()
        assert marks == 0
    finally:
        store.close()
