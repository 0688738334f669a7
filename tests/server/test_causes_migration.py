"""A ledger written before causal edges existed gets them on upgrade (migration 0004): every
stored ``parent_id`` becomes an edge, so why() and impact() answer over old data at once."""

from __future__ import annotations

import uuid

from alembic import command
from alembic.config import Config

from agentledger.server._ingest import now_ts, prepare, validate_item
from agentledger.server._store import open_store
from agentledger.server._store.sqlite import MIGRATIONS_DIR


def _alembic(connection: object, action: str, revision: str) -> None:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["connection"] = connection
    getattr(command, action)(config, revision)


def test_upgrade_backfills_edges_from_parent_ids(store_db: str) -> None:
    ids = [str(uuid.uuid4()) for _ in range(4)]
    kinds = ["llm_start", "llm_end", "assistant_response", "custom"]
    raw = [
        {"agent": "old", "event": kind, "data": {}, "event_id": event_id}
        | ({"parent_id": ids[i - 1]} if i else {})
        for i, (event_id, kind) in enumerate(zip(ids, kinds, strict=True))
    ]
    store = open_store(store_db)
    items = [
        prepare(validate_item(r), max_depth=64, patterns=(), received_at=now_ts()) for r in raw
    ]
    assert all(outcome.ok for outcome in store.append(items))
    with store.engine.begin() as conn:  # back to the schema before causal edges
        _alembic(conn, "downgrade", "0003")
    store.close()
    store = open_store(store_db)  # opening upgrades to the newest revision
    try:
        why = store.why(ids[-1], depth=100, limit=100, agent_scope=None)
        assert why is not None and not why.missing and not why.cut_at
        assert why.roots == [ids[0]]
        kinds_by_effect = {edge["effect"]: edge["kind"] for edge in why.edges}
        assert kinds_by_effect == {ids[1]: "closes", ids[2]: "cause", ids[3]: "cause"}
        impact = store.impact(ids[0], depth=100, limit=100, agent_scope=None)
        assert impact is not None and len(impact.events) == 3
    finally:
        store.close()
