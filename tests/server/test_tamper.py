"""Tampering with the stored rows behind the server's back (SQLite file or PostgreSQL tables):
verify pinpoints each change; anchors catch truncation."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest

from _stores import POSTGRES_ONLY, SQLITE_ONLY, SqlConnection, sql_connection
from agentledger.server import Settings, create_app

KEY = "tamper-key"
AGENT = "audited"


@pytest.fixture
def db_path(store_db: str) -> str:
    return store_db


def make_client(db_path: str, chain_key: str | None = None) -> tuple[Any, httpx.AsyncClient]:
    app = create_app(Settings(db=db_path, dev_key=KEY, chain_key=chain_key))
    client = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://localhost",
        headers={"Authorization": f"Bearer {KEY}"},
    )
    return app, client


@pytest.fixture
async def client(db_path: str) -> Any:
    app, c = make_client(db_path)
    async with c:
        yield c
    app.state.store.close()


@pytest.fixture
def sql(db_path: str) -> Iterator[SqlConnection]:
    with sql_connection(db_path) as conn:
        yield conn


async def write(client: httpx.AsyncClient, n: int = 10) -> list[dict[str, Any]]:
    items = [{"agent": AGENT, "event": "step", "data": {"i": i}} for i in range(1, n + 1)]
    response = await client.post("/v1/events/batch", json={"events": items})
    assert response.json()["written"] == n
    results: list[dict[str, Any]] = response.json()["results"]
    return results


async def verify(client: httpx.AsyncClient, **params: Any) -> dict[str, Any]:
    response = await client.get("/v1/events/chain", params={"agent": AGENT, **params})
    assert response.status_code == 200, response.text
    report: dict[str, Any] = response.json()
    return report


def kinds(report: dict[str, Any]) -> list[tuple[str, int | None]]:
    return [(p["kind"], p["sequence_no"]) for p in report["problems"]]


async def test_untouched_chain_is_intact(client: httpx.AsyncClient) -> None:
    await write(client)
    report = await verify(client)
    assert report["intact"] and report["verified"] == 10 and report["problems"] == []
    assert report["chain_head"]["sequence_no"] == 10


async def test_edited_record_is_content_changed(
    client: httpx.AsyncClient, sql: SqlConnection
) -> None:
    results = await write(client)
    record = sql.execute(
        "SELECT record FROM events WHERE agent=? AND sequence_no=3", (AGENT,)
    ).fetchone()[0]
    edited = record.replace(b'"i":3', b'"i":333')
    sql.execute("UPDATE events SET record=? WHERE agent=? AND sequence_no=3", (edited, AGENT))
    report = await verify(client)
    assert not report["intact"]
    assert kinds(report) == [("content_changed", 3)]
    assert report["problems"][0]["event_id"] == results[2]["event_id"]


@pytest.mark.parametrize(
    ("expression", "detail"),
    [
        ("replace(CAST(record AS TEXT), '\"i\":2', '\"i\":22')", "checksum"),
        ("CAST(record AS TEXT)", None),  # same bytes as TEXT: not a change of content
        ("42", "not JSON text"),
    ],
)
@SQLITE_ONLY
async def test_record_stored_as_another_sql_type_is_reported_not_a_500(
    client: httpx.AsyncClient, sql: SqlConnection, expression: str, detail: str | None
) -> None:
    """SQLite is dynamically typed: an edit by SQL can leave TEXT or a number in ``record``."""
    await write(client)
    sql.execute(f"UPDATE events SET record={expression} WHERE agent=? AND sequence_no=2", (AGENT,))
    report = await verify(client)
    if detail is None:
        assert report["intact"], report
    else:
        assert kinds(report) == [("content_changed", 2)]
        assert detail in report["problems"][0]["detail"]


async def test_edited_column_is_content_changed(
    client: httpx.AsyncClient, sql: SqlConnection
) -> None:
    await write(client)
    sql.execute("UPDATE events SET event='other' WHERE agent=? AND sequence_no=5", (AGENT,))
    assert kinds(await verify(client)) == [("content_changed", 5)]


async def test_edit_with_recomputed_checksum_breaks_the_link(
    client: httpx.AsyncClient, sql: SqlConnection
) -> None:
    await write(client)
    record = sql.execute(
        "SELECT record FROM events WHERE agent=? AND sequence_no=7", (AGENT,)
    ).fetchone()[0]
    edited = record.replace(b'"i":7', b'"i":8')
    sql.execute(
        "UPDATE events SET record=?, checksum=? WHERE agent=? AND sequence_no=7",
        (edited, hashlib.sha256(edited).hexdigest(), AGENT),
    )
    report = await verify(client)
    assert kinds(report) == [("content_changed", 7)]
    assert "chain link" in report["problems"][0]["detail"]


async def test_deleted_row_is_missing(client: httpx.AsyncClient, sql: SqlConnection) -> None:
    results = await write(client)
    sql.execute("DELETE FROM events WHERE agent=? AND sequence_no=4", (AGENT,))
    report = await verify(client)
    assert kinds(report) == [("missing_or_reordered", 5)]
    assert report["problems"][0]["event_id"] == results[4]["event_id"]
    assert "expected sequence_no 4" in report["problems"][0]["detail"]


async def test_reordered_rows_are_reported(client: httpx.AsyncClient, sql: SqlConnection) -> None:
    await write(client)
    sql.execute("UPDATE events SET sequence_no=-1 WHERE agent=? AND sequence_no=2", (AGENT,))
    sql.execute("UPDATE events SET sequence_no=2 WHERE agent=? AND sequence_no=3", (AGENT,))
    sql.execute("UPDATE events SET sequence_no=3 WHERE agent=? AND sequence_no=-1", (AGENT,))
    report = await verify(client)
    assert kinds(report) == [("missing_or_reordered", 2), ("missing_or_reordered", 3)]


async def test_deleted_tail_is_caught_by_the_head(
    client: httpx.AsyncClient, sql: SqlConnection
) -> None:
    await write(client)
    sql.execute("DELETE FROM events WHERE agent=? AND sequence_no>8", (AGENT,))
    report = await verify(client)
    assert kinds(report) == [("missing_or_reordered", 9)]


async def test_anchor_catches_tail_truncation(
    client: httpx.AsyncClient, sql: SqlConnection
) -> None:
    await write(client)
    anchor = (await verify(client))["chain_head"]
    # a careful attacker deletes the tail *and* rewinds the agent head with its counters
    sql.execute("DELETE FROM events WHERE agent=? AND sequence_no>7", (AGENT,))
    row = sql.execute(
        "SELECT chain_hash, timestamp FROM events WHERE agent=? AND sequence_no=7", (AGENT,)
    ).fetchone()
    sql.execute("UPDATE agents SET last_seq=7, last_hash=? WHERE agent=?", (row[0], AGENT))
    assert kinds(await verify(client)) == [("head_changed", 7)]  # event_count still says 10
    sql.execute("UPDATE agents SET event_count=7, last_seen=? WHERE agent=?", (row[1], AGENT))
    assert (await verify(client))["intact"]  # without the anchor nothing is visible
    by_hash = await verify(client, anchor=anchor["chain_hash"])
    assert kinds(by_hash) == [("truncated_after_anchor", None)]
    both = await verify(client, after_seq=str(anchor["sequence_no"]), anchor=anchor["chain_hash"])
    assert kinds(both) == [("truncated_after_anchor", 10)]


async def test_anchor_allows_incremental_verification(client: httpx.AsyncClient) -> None:
    await write(client, 5)
    head = (await verify(client))["chain_head"]
    await write(client, 5)
    report = await verify(client, after_seq=head["sequence_no"], anchor=head["chain_hash"])
    assert report["intact"] and report["verified"] == 5
    assert report["chain_head"]["sequence_no"] == 10


async def test_rewritten_history_does_not_match_the_anchor(
    client: httpx.AsyncClient, sql: SqlConnection
) -> None:
    await write(client)
    head = (await verify(client))["chain_head"]
    _rewrite_chain(sql, from_seq=2, key=None)  # consistent forgery of the whole chain
    assert (await verify(client))["intact"]
    report = await verify(client, after_seq=head["sequence_no"], anchor=head["chain_hash"])
    assert kinds(report) == [("anchor_mismatch", 10)]


async def test_hmac_chain_detects_a_full_rewrite(db_path: str) -> None:
    app, client = make_client(db_path, chain_key="server-secret")
    async with client:
        await write(client)
        assert (await verify(client))["intact"]
        with sql_connection(db_path) as sql:
            _rewrite_chain(sql, from_seq=4, key=None)  # the forger has no HMAC key
        report = await verify(client)
    app.state.store.close()
    assert kinds(report)[0] == ("content_changed", 4)


@POSTGRES_ONLY
@pytest.mark.parametrize("raw", [b"42", b'"text"', b"[1, 2]"])
async def test_record_replaced_by_other_bytes_is_content_changed(
    client: httpx.AsyncClient, sql: SqlConnection, raw: bytes
) -> None:
    """PostgreSQL enforces ``bytea`` (and refuses non-JSON bytes through the generated
    ``jsonb`` column): JSON that is not an object is what an edit can leave."""
    await write(client)
    sql.execute("UPDATE events SET record=? WHERE agent=? AND sequence_no=2", (raw, AGENT))
    assert kinds(await verify(client)) == [("content_changed", 2)]


def _rewrite_chain(sql: SqlConnection, *, from_seq: int, key: None) -> None:
    """Edit ``data.i`` of ``from_seq`` and recompute checksums, SHA-256 links and column
    seals after it."""
    rows = sql.execute(
        "SELECT sequence_no, record, chain_hash, received_at, importance FROM events "
        "WHERE agent=? ORDER BY sequence_no",
        (AGENT,),
    ).fetchall()
    previous = ""
    for seq, record, chain_hash, received_at, importance in rows:
        if seq >= from_seq:
            rec = orjson.loads(record)
            if seq == from_seq:
                rec["data"]["i"] = -1
            record = orjson.dumps(rec, option=orjson.OPT_SORT_KEYS)
            chain_hash = hashlib.sha256(previous.encode() + record).hexdigest()
            columns = b"columns:" + orjson.dumps([received_at, importance])
            seal = hashlib.sha256(chain_hash.encode() + columns).hexdigest()
            sql.execute(
                "UPDATE events SET record=?, checksum=?, chain_hash=?, seal=? "
                "WHERE agent=? AND sequence_no=?",
                (record, hashlib.sha256(record).hexdigest(), chain_hash, seal, AGENT, seq),
            )
        previous = chain_hash
    sql.execute("UPDATE agents SET last_hash=? WHERE agent=?", (previous, AGENT))


async def write_linked(client: httpx.AsyncClient) -> list[str]:
    """Four events: b caused by a (read), c closing b, d caused by a and c."""
    import uuid

    a, b, c, d = (str(uuid.uuid4()) for _ in range(4))
    items = [
        {"agent": AGENT, "event": "user_message", "data": {}, "event_id": a},
        {
            "agent": AGENT,
            "event": "llm_start",
            "data": {},
            "event_id": b,
            "parent_id": a,
            "caused_by": [{"event_id": a, "kind": "read"}],
        },
        {"agent": AGENT, "event": "llm_end", "data": {"n": "c"}, "event_id": c, "parent_id": b},
        {"agent": AGENT, "event": "x", "data": {}, "event_id": d, "caused_by": [a, c]},
    ]
    response = await client.post("/v1/events/batch", json={"events": items})
    assert response.json()["written"] == 4
    return [a, b, c, d]


@pytest.mark.parametrize(
    ("change", "seq"),
    [
        ("DELETE FROM event_causes WHERE effect_id = {d} AND cause_id = {a}", 4),
        ("UPDATE event_causes SET kind = 'cause' WHERE effect_id = {b}", 2),
        ("UPDATE event_causes SET cause_id = {d} WHERE effect_id = {c}", 3),
        ("UPDATE event_causes SET agent = 'elsewhere' WHERE effect_id = {b}", 2),
        (
            "INSERT INTO event_causes (effect_id, cause_id, kind, agent) "
            "VALUES ({c}, {a}, 'read', '" + AGENT + "')",
            3,
        ),
    ],
)
async def test_changed_causal_edges_are_content_changed(
    client: httpx.AsyncClient, sql: SqlConnection, change: str, seq: int
) -> None:
    """The edge table is derived from the records: why() and impact() walk it, so verify
    checks each event's stored edges against the causes its record names."""
    a, b, c, d = await write_linked(client)
    assert (await verify(client))["intact"]
    names = {"a": a, "b": b, "c": c, "d": d}
    sql.execute(change.format(**{k: f"'{v}'" for k, v in names.items()}))
    report = await verify(client)
    assert not report["intact"]
    assert kinds(report) == [("content_changed", seq)]
    assert "causal edges" in report["problems"][0]["detail"]


async def test_an_erased_events_parent_edge_is_still_checked(
    client: httpx.AsyncClient, sql: SqlConnection
) -> None:
    """After forget the record (and its caused_by) is gone; the parent edge must still name
    the kept parent_id and stay the agent's. Further edges of an erased event cannot be
    checked against anything (docs/pages/causal-edges.md says so)."""
    a, _b, c, _d = await write_linked(client)
    assert await forget(client, "n", "c") == [c]
    assert (await verify(client))["intact"]
    sql.execute("UPDATE event_causes SET cause_id = ? WHERE effect_id = ?", (a, c))
    report = await verify(client)
    assert kinds(report) == [("content_changed", 3)]
    assert "erased" in report["problems"][0]["detail"]


async def forget(client: httpx.AsyncClient, key: str, value: str) -> list[str]:
    """A real forget of the audited agent's events holding ``key == value``."""
    response = await client.request(
        "DELETE",
        "/v1/memory/forget",
        json={"filter_key": key, "filter_value": value, "agent": AGENT},
    )
    assert response.status_code == 200, response.text
    erased: list[str] = response.json()["event_ids"]
    return erased


@pytest.mark.parametrize("chain_key", [None, "a-chain-key"])
async def test_a_real_forget_verifies_intact(db_path: str, chain_key: str | None) -> None:
    app, client = make_client(db_path, chain_key)
    async with client:
        results = await write(client)
        assert await forget(client, "i", "4") == [results[3]["event_id"]]
        report = await verify(client)
    app.state.store.close()
    assert report["intact"], report
    assert report["erased"] == 1 and report["verified"] == 10
    assert "1 erased by forget" in report["summary"]


@pytest.mark.parametrize(
    "change",
    [
        "UPDATE events SET record = NULL WHERE event_id = ?",
        "UPDATE events SET record = NULL, checksum = NULL WHERE event_id = ?",
        "UPDATE events SET record = NULL, checksum = NULL, fingerprint = NULL WHERE event_id = ?",
    ],
)
async def test_a_record_set_to_null_by_hand_is_content_changed(
    client: httpx.AsyncClient, sql: SqlConnection, change: str
) -> None:
    """Only forget leaves a valid erasure mark: a NULL written by hand is not an erasure."""
    results = await write(client)
    sql.execute(change, (results[4]["event_id"],))
    report = await verify(client)
    assert kinds(report) == [("content_changed", 5)]
    assert report["problems"][0]["event_id"] == results[4]["event_id"]
    assert "forget mark" in report["problems"][0]["detail"]
    assert report["erased"] == 0 and "erased by forget" not in report["summary"]


async def test_a_forget_mark_copied_to_another_row_is_content_changed(
    client: httpx.AsyncClient, sql: SqlConnection
) -> None:
    """The mark is bound to its event: one real forget does not bless another NULL."""
    results = await write(client)
    assert await forget(client, "i", "2") == [results[1]["event_id"]]
    (mark,) = sql.execute(
        "SELECT fingerprint FROM events WHERE event_id = ?", (results[1]["event_id"],)
    ).fetchone()
    sql.execute(
        "UPDATE events SET record = NULL, checksum = NULL, fingerprint = ? WHERE event_id = ?",
        (mark, results[6]["event_id"]),
    )
    report = await verify(client)
    assert kinds(report) == [("content_changed", 7)] and report["erased"] == 1


async def test_an_edited_supersedes_column_is_content_changed(
    client: httpx.AsyncClient, sql: SqlConnection
) -> None:
    """``supersedes`` hides the named event from search: the column must match the record."""
    results = await write(client)
    hidden, by = results[2]["event_id"], results[7]["event_id"]
    found = await client.post("/v1/search", json={"query": "step", "agent": AGENT, "limit": 50})
    assert hidden in {r["event_id"] for r in found.json()["results"]}
    sql.execute("UPDATE events SET supersedes = ? WHERE event_id = ?", (hidden, by))
    found = await client.post("/v1/search", json={"query": "step", "agent": AGENT, "limit": 50})
    assert hidden not in {r["event_id"] for r in found.json()["results"]}  # what it hides
    report = await verify(client)
    assert kinds(report) == [("content_changed", 8)]
    assert report["problems"][0]["event_id"] == by


@pytest.mark.parametrize(
    "change",
    [
        "UPDATE events SET supersedes = '{other}' WHERE event_id = '{erased}'",
        "UPDATE events SET parent_id = '{other}' WHERE event_id = '{erased}'",
        "UPDATE events SET event = 'edited' WHERE event_id = '{erased}'",
    ],
)
async def test_an_edited_column_of_an_erased_event_is_content_changed(
    client: httpx.AsyncClient, sql: SqlConnection, change: str
) -> None:
    """A tombstone keeps some columns (type, parent, supersedes...); its mark covers them."""
    results = await write(client)
    erased, other = results[5]["event_id"], results[0]["event_id"]
    assert await forget(client, "i", "6") == [erased]
    sql.execute(change.format(erased=erased, other=other))
    report = await verify(client)
    assert ("content_changed", 6) in kinds(report)
    assert all(p["event_id"] == erased for p in report["problems"])
