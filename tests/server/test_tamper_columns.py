"""Every stored column, edited by SQL behind the server's back: verify pinpoints the change
(kind, sequence number, a detail naming what changed), or, for the few columns outside the
chain, the test says so and shows that what a reader sees does not change.

Design: ``docs/design/server-chain.md`` ("What the chain covers besides the record").
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from _stores import SqlConnection, sql_connection
from agentledger.server import Settings, create_app

KEY = "columns-key"
AGENT = "audited"
#: The event every edit targets (of ten; an erased one for the tombstone cases).
SEQ = 5


@dataclass(frozen=True)
class Edit:
    """One SQL edit and what verify must say about it.

    ``sql`` may name ``{id}`` (the target event's id), ``{other}`` and ``{third}`` (other
    events' ids), ``{cause}`` (the id its ``caused_by`` names), ``{agent}``; ``expect`` lists
    ``(kind, sequence_no)``; ``detail`` is a phrase the first problem's detail holds.
    ``expect=[]`` marks a column outside the chain (the reason is in ``why``).
    """

    sql: str
    expect: list[tuple[str, int]]
    detail: str = ""
    erased: bool = False
    why: str = ""
    #: outside the chain and only a link of the derived search indexes: search may change
    index_only: bool = False
    #: SQL run before the first verify (e.g. a row the edit then changes)
    setup: str = ""


_ROW = "WHERE event_id = '{id}'"
#: An embedding row for the target event, as the embedding worker would write it (the
#: server under test has no embedding model configured).
_EMBEDDING = (
    "INSERT INTO event_embeddings (id, agent, model, dim, vector) SELECT id, agent, 'm', 2, "
    "{vector} FROM events WHERE event_id = '{id}'"
)
_HEAD = "WHERE agent = '{agent}'"

#: Table -> column -> the edit. Every column of ``events``, ``event_causes`` and ``agents``
#: (checked against the tables below, so a new column cannot be forgotten).
EDITS: dict[str, dict[str, Edit]] = {
    "events": {
        "id": Edit(
            "UPDATE events SET id = id + 1000000 " + _ROW,
            [],
            why=(
                "the surrogate row key that links the derived search indexes to the row: an "
                "edit may detach the event from keyword or semantic search, never change it"
            ),
            index_only=True,
        ),
        "event_id": Edit(
            "UPDATE events SET event_id = '" + str(uuid.uuid4()) + "' " + _ROW,
            [("content_changed", SEQ)],
            "event_id column differs",
        ),
        "agent": Edit(
            "UPDATE events SET agent = 'elsewhere' " + _ROW,
            [("missing_or_reordered", SEQ + 1)],
            f"expected sequence_no {SEQ}",
        ),
        "sequence_no": Edit(
            "UPDATE events SET sequence_no = 1000 " + _ROW,
            [("missing_or_reordered", SEQ + 1), ("missing_or_reordered", 1000)],
            f"expected sequence_no {SEQ}",
        ),
        "timestamp": Edit(
            "UPDATE events SET timestamp = '1999-01-01T00:00:00.000000+00:00' " + _ROW,
            [("content_changed", SEQ)],
            "timestamp column differs",
        ),
        "received_at": Edit(
            "UPDATE events SET received_at = '1999-01-01T00:00:00.000000+00:00' " + _ROW,
            [("content_changed", SEQ)],
            "received_at or importance",
        ),
        "event": Edit(
            "UPDATE events SET event = 'other' " + _ROW,
            [("content_changed", SEQ)],
            "event column differs",
        ),
        "parent_id": Edit(
            "UPDATE events SET parent_id = '{other}' " + _ROW,
            [("content_changed", SEQ)],
            "parent_id column differs",
        ),
        "session_id": Edit(
            "UPDATE events SET session_id = 'other-session' " + _ROW,
            [("content_changed", SEQ)],
            "session_id column differs",
        ),
        "supersedes": Edit(
            "UPDATE events SET supersedes = '{other}' " + _ROW,
            [("content_changed", SEQ)],
            "supersedes column differs",
        ),
        "importance": Edit(
            "UPDATE events SET importance = 0.99 " + _ROW,
            [("content_changed", SEQ)],
            "received_at or importance",
        ),
        "idempotency_key": Edit(
            "UPDATE events SET idempotency_key = 'another-key' " + _ROW,
            [],
            why=(
                "the client's retry token: not part of the event, cleared by forget, it only "
                "decides which later write is a duplicate"
            ),
        ),
        "fingerprint": Edit(
            "UPDATE events SET fingerprint = '" + "0" * 64 + "' " + _ROW,
            [],
            why="on a live event the hash of the body as sent, for retries; never shown",
        ),
        "record": Edit(
            "UPDATE events SET record = {edited_record} " + _ROW,
            [("content_changed", SEQ)],
            "checksum",
        ),
        "checksum": Edit(
            "UPDATE events SET checksum = '" + "0" * 64 + "' " + _ROW,
            [("content_changed", SEQ)],
            "checksum",
        ),
        "chain_hash": Edit(
            "UPDATE events SET chain_hash = '" + "0" * 64 + "' " + _ROW,
            [("content_changed", SEQ)],
            "chain link",
        ),
        "seal": Edit(
            "UPDATE events SET seal = NULL " + _ROW,
            [("content_changed", SEQ)],
            "received_at or importance",
        ),
    },
    "event_causes": {
        "effect_id": Edit(
            "UPDATE event_causes SET effect_id = '{other}' WHERE effect_id = '{id}'",
            [("content_changed", 1), ("content_changed", SEQ)],
            "causal edges",
        ),
        "cause_id": Edit(
            "UPDATE event_causes SET cause_id = '{third}' WHERE effect_id = '{id}' "
            "AND cause_id = '{cause}'",
            [("content_changed", SEQ)],
            "causal edges",
        ),
        "kind": Edit(
            "UPDATE event_causes SET kind = 'closes' WHERE effect_id = '{id}' "
            "AND cause_id = '{cause}'",
            [("content_changed", SEQ)],
            "causal edges",
        ),
        "agent": Edit(
            "UPDATE event_causes SET agent = 'elsewhere' WHERE effect_id = '{id}'",
            [("content_changed", SEQ)],
            "causal edges",
        ),
    },
    "event_embeddings": {
        name: Edit(
            f"UPDATE event_embeddings SET {name} = {value} WHERE id = (SELECT id FROM events "
            + _ROW
            + ")",
            [],
            why=(
                "a derived search index, computed from the record by the embedding model: an "
                "edit may change semantic ranking, never an event's content"
            ),
            index_only=True,
            setup=_EMBEDDING,
        )
        for name, value in (
            ("id", "id + 1000000"),
            ("agent", "'elsewhere'"),
            ("model", "'other-model'"),
            ("dim", "3"),
            ("vector", "{edited_vector}"),
        )
    },
    "agents": {
        "agent": Edit(
            "UPDATE agents SET agent = 'elsewhere' " + _HEAD,
            [("head_changed", 10)],
            "no agents row",
        ),
        "last_seq": Edit(
            "UPDATE agents SET last_seq = 7 " + _HEAD, [("head_changed", 8)], "agents.last_seq"
        ),
        "last_hash": Edit(
            "UPDATE agents SET last_hash = '" + "0" * 64 + "' " + _HEAD,
            [("head_changed", 10)],
            "agents.last_hash",
        ),
        "event_count": Edit(
            "UPDATE agents SET event_count = 3 " + _HEAD,
            [("head_changed", 10)],
            "agents.event_count",
        ),
        "first_seen": Edit(
            "UPDATE agents SET first_seen = '1999-01-01T00:00:00.000000+00:00' " + _HEAD,
            [("head_changed", 10)],
            "agents.first_seen",
        ),
        "last_seen": Edit(
            "UPDATE agents SET last_seen = '2999-01-01T00:00:00.000000+00:00' " + _HEAD,
            [("head_changed", 10)],
            "agents.last_seen",
        ),
    },
}

#: The columns a forget tombstone keeps (its record is gone): each stays covered.
TOMBSTONE_EDITS: dict[str, Edit] = {
    name: Edit(
        f"UPDATE events SET {name} = {value} " + _ROW,
        [("content_changed", SEQ)],
        detail,
        erased=True,
    )
    for name, value, detail in (
        ("event_id", "'" + str(uuid.uuid4()) + "'", "forget mark"),
        ("timestamp", "'1999-01-01T00:00:00.000000+00:00'", "forget mark"),
        ("received_at", "'1999-01-01T00:00:00.000000+00:00'", "received_at or importance"),
        ("event", "'other'", "forget mark"),
        ("parent_id", "'{other}'", "forget mark"),
        ("session_id", "'other-session'", "forget mark"),
        ("supersedes", "'{other}'", "forget mark"),
        ("importance", "0.01", "received_at or importance"),
        ("fingerprint", "'" + "0" * 64 + "'", "forget mark"),
        ("seal", "NULL", "received_at or importance"),
        ("idempotency_key", "'key-after-forget'", ""),
    )
}
TOMBSTONE_EDITS["idempotency_key"] = Edit(
    TOMBSTONE_EDITS["idempotency_key"].sql,
    [],
    erased=True,
    why="forget clears it; outside the chain as on a live event",
)


def _cases() -> Iterator[Any]:
    for table, columns in EDITS.items():
        for column, edit in columns.items():
            yield pytest.param(edit, id=f"{table}.{column}")
    for column, edit in TOMBSTONE_EDITS.items():
        yield pytest.param(edit, id=f"tombstone.{column}")


def test_every_column_has_an_edit() -> None:
    """A column added to a table must be added here (pinpointed, or outside with a why)."""
    from agentledger.server._tables import agents, event_causes, event_embeddings, events

    for table in (events, event_causes, event_embeddings, agents):
        assert set(EDITS[table.name]) == {c.name for c in table.columns}, table.name
    assert all(
        edit.why for columns in EDITS.values() for edit in columns.values() if not edit.expect
    )


@pytest.fixture
async def client(store_db: str) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(Settings(db=store_db, dev_key=KEY, chain_key="columns-chain-key"))
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://localhost",
        headers={"Authorization": f"Bearer {KEY}"},
    ) as c:
        yield c
    app.state.store.close()


@pytest.fixture
def sql(store_db: str) -> Iterator[SqlConnection]:
    with sql_connection(store_db) as conn:
        yield conn


async def _write(client: httpx.AsyncClient) -> list[str]:
    """Ten events; each names the one before as parent and the first in ``caused_by``, and
    carries importance and an idempotency key."""
    ids = [str(uuid.uuid4()) for _ in range(10)]
    items = [
        {
            "agent": AGENT,
            "event": "step",
            "event_id": ids[i],
            "data": {"i": i + 1, "text": f"note number {i + 1}"},
            "session_id": "s1",
            "importance": 0.5,
            "idempotency_key": f"key-{i + 1}",
            **({"parent_id": ids[i - 1], "caused_by": [ids[0]]} if i else {}),
        }
        for i in range(10)
    ]
    response = await client.post("/v1/events/batch", json={"events": items})
    assert response.json()["written"] == 10, response.text
    return ids


async def _verify(client: httpx.AsyncClient) -> dict[str, Any]:
    response = await client.get("/v1/events/chain", params={"agent": AGENT})
    assert response.status_code == 200, response.text
    report: dict[str, Any] = response.json()
    return report


async def _reads(client: httpx.AsyncClient, event_id: str) -> dict[str, Any]:
    """What a reader sees of the event: listing, search and memory context."""
    listed = await client.get("/v1/events", params={"agent": AGENT, "limit": 50})
    found = await client.post("/v1/search", json={"query": "note", "agent": AGENT, "limit": 50})
    memory = await client.post("/v1/memory/context", json={"agent": AGENT, "task": "note number"})
    event = next(e for e in listed.json() if e["event_id"] == event_id)
    return {
        "event": event,
        "search": [r["event_id"] for r in found.json()["results"]],
        "memory": memory.json(),
    }


@pytest.mark.parametrize("edit", list(_cases()))
async def test_each_stored_column_edit_is_pinpointed(
    client: httpx.AsyncClient, sql: SqlConnection, edit: Edit
) -> None:
    """README, intro ("trust"): the hash chain names every changed, missing or reordered
    event, and tombstones keep it verifiable."""
    ids = await _write(client)
    target = ids[SEQ - 1]
    if edit.erased:
        response = await client.request(
            "DELETE",
            "/v1/memory/forget",
            json={"filter_key": "i", "filter_value": SEQ, "agent": AGENT},
        )
        assert response.json()["event_ids"] == [target], response.text
    names = {"id": target, "other": ids[0], "cause": ids[0], "third": ids[2], "agent": AGENT}
    names["edited_record"] = (
        "convert_to(replace(convert_from(record, 'UTF8'), 'number', 'NUMBER'), 'UTF8')"
        if sql.postgres
        else "CAST(replace(CAST(record AS TEXT), 'number', 'NUMBER') AS BLOB)"
    )
    blob = "'\\x{}'" if sql.postgres else "X'{}'"
    names["vector"] = blob.format("0000803f00000000")  # float32 [1.0, 0.0]
    names["edited_vector"] = blob.format("000000000000803f")
    if edit.setup:
        sql.execute(edit.setup.format(**names))
    report = await _verify(client)
    assert report["intact"], report
    before = await _reads(client, target)
    sql.execute(edit.sql.format(**names))
    report = await _verify(client)
    problems = [(p["kind"], p["sequence_no"]) for p in report["problems"]]
    if not edit.expect:
        # outside the chain (``edit.why``): verify stays intact and only the column's own
        # echo in the event (idempotency_key) may differ for a reader
        assert report["intact"], (edit.why, report)
        after = await _reads(client, target)
        before["event"].pop("idempotency_key")
        after["event"].pop("idempotency_key")
        if edit.index_only:
            del before["search"], after["search"], before["memory"], after["memory"]
        assert after == before, edit.why
        return
    assert problems == edit.expect, report
    first = report["problems"][0]
    assert edit.detail in first["detail"], first
    if first["sequence_no"] == SEQ and "SET event_id" not in edit.sql:
        assert first["event_id"] == target  # an edited event_id is reported as it now reads
