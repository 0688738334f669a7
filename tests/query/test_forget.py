"""DELETE /v1/memory/forget: tombstones, chain still verifies, index rows and embeddings gone
in the same transaction, dry run, secure deletion from the database file, bad input."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import httpx
import pytest

from _stores import is_postgres, sql_connection

from ._helpers import batch, ids, log, search, wait_embedded


async def forget(client: httpx.AsyncClient, body: dict[str, Any], **params: Any) -> httpx.Response:
    return await client.request("DELETE", "/v1/memory/forget", json=body, params=params)


async def test_forget_matches_at_any_depth_lists_and_numbers(
    query_client: httpx.AsyncClient, agent_name: str
) -> None:
    items = [
        {"agent": agent_name, "event": "user_message", "data": {"user_id": "u-7", "text": "top"}},
        {
            "agent": agent_name,
            "event": "tool_call",
            "data": {"tool": "crm", "args": {"customer": {"user_id": 7, "note": "nested"}}},
        },
        {
            "agent": agent_name,
            "event": "retrieval",
            "data": {"query": "q", "documents": [{"meta": {"user_id": ["x", "u-7"]}}]},
        },
        {"agent": agent_name, "event": "user_message", "data": {"user_id": "u-8", "text": "kept"}},
        {"agent": agent_name, "event": "user_message", "data": {"other": "u-7", "text": "kept2"}},
        {"agent": agent_name, "event": "user_message", "data": {"user_id": 7.0, "text": "float"}},
    ]
    written = [r["event_id"] for r in await batch(query_client, items)]
    scope = {"agent": agent_name}  # the store may be shared (PostgreSQL)
    by_string = await forget(
        query_client, {"filter_key": "user_id", "filter_value": "u-7", **scope}
    )
    assert by_string.status_code == 200, by_string.text
    body = by_string.json()
    assert body["deleted_events"] == 2 and body["dry_run"] is False
    assert set(body["event_ids"]) == {written[0], written[2]}
    assert body["filter"] == {"filter_key": "user_id", "filter_value": "u-7", "agent": agent_name}
    by_number = (
        await forget(query_client, {"filter_key": "user_id", "filter_value": "7", **scope})
    ).json()
    assert set(by_number["event_ids"]) == {written[1], written[5]}  # 7 and 7.0 as "7"
    for event_id in (written[0], written[1], written[2], written[5]):
        erased = (await query_client.get(f"/v1/events/{event_id}")).json()
        assert erased["erased"] is True and erased["data"] == {} and erased["checksum"] is None
    kept = (await query_client.get(f"/v1/events/{written[3]}")).json()
    assert kept["data"]["text"] == "kept" and not kept.get("erased")
    chain = (await query_client.get("/v1/events/chain", params={"agent": agent_name})).json()
    assert chain["intact"] is True, chain
    assert chain["erased"] == 4 and chain["verified"] == 6
    assert "4 erased" in chain["summary"]
    assert ids(await search(query_client, "nested top float", agent=agent_name)) == []
    assert set(ids(await search(query_client, "kept kept2", agent=agent_name))) == {
        written[3],
        written[4],
    }


async def test_dry_run_reports_and_changes_nothing(
    query_client: httpx.AsyncClient, agent_name: str
) -> None:
    first = await log(query_client, agent_name, "user_message", {"email": "a@example.com"})
    for params, body in (({}, {"dry_run": True}), ({"dry_run": "true"}, {})):
        response = await forget(
            query_client,
            {"filter_key": "email", "filter_value": "a@example.com", "agent": agent_name, **body},
            **params,
        )
        answer = response.json()
        assert answer["dry_run"] is True and answer["deleted_events"] == 1
        assert answer["event_ids"] == [first["event_id"]]
    still = (await query_client.get(f"/v1/events/{first['event_id']}")).json()
    assert still["data"] == {"email": "a@example.com"}
    assert ids(await search(query_client, "example", agent=agent_name)) == [first["event_id"]]


async def test_forget_is_scoped_to_the_agent(
    query_client: httpx.AsyncClient, agent_name: str
) -> None:
    other = agent_name + "-b"
    mine = await log(query_client, agent_name, "user_message", {"uid": "shared"})
    theirs = await log(query_client, other, "user_message", {"uid": "shared"})
    answer = (
        await forget(
            query_client, {"filter_key": "uid", "filter_value": "shared", "agent": agent_name}
        )
    ).json()
    assert answer["event_ids"] == [mine["event_id"]] and answer["agents"] == {agent_name: 1}
    assert (await query_client.get(f"/v1/events/{theirs['event_id']}")).json()["data"] == {
        "uid": "shared"
    }


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"filter_key": "", "filter_value": "x"}, "filter_key"),
        ({"filter_key": "   ", "filter_value": "x"}, "filter_key"),
        ({"filter_value": "x"}, "filter_key"),
        ({"filter_key": "k"}, "filter_value"),
        ({"filter_key": "k", "filter_value": ""}, "filter_value"),
        ({"filter_key": "k", "filter_value": {"a": 1}}, "filter_value"),
        ({"filter_key": "k", "filter_value": "x", "agent": "a/b"}, "agent"),
        ({"filter_key": "k", "filter_value": "x", "force": True}, "force"),
        ({"filter_key": "k\x00", "filter_value": "x"}, "filter_key"),
        ({"filter_key": "k", "filter_value": "x\x00"}, "filter_value"),
    ],
)
async def test_bad_forget_input_is_a_4xx(
    query_client: httpx.AsyncClient, body: dict[str, Any], field: str
) -> None:
    response = await forget(query_client, body)
    assert response.status_code == 422, response.text
    assert field in response.text


async def test_read_only_key_cannot_forget(
    query_client: httpx.AsyncClient, agent_name: str
) -> None:
    await log(query_client, agent_name, "user_message", {"uid": "ro"})
    created = (
        await query_client.post("/v1/keys", json={"name": "ro", "scope": "read_only"})
    ).json()
    response = await query_client.request(
        "DELETE",
        "/v1/memory/forget",
        json={"filter_key": "uid", "filter_value": "ro"},
        headers={"Authorization": f"Bearer {created['key']}"},
    )
    assert response.status_code == 403


def _fault_sql(db: str, agent: str) -> tuple[list[str], list[str]]:
    """Statements creating, then dropping, a trigger that fails any update of ``record`` of
    ``agent``'s events (a real database fault inside the forget transaction)."""
    if is_postgres(db):
        return (
            [
                "CREATE FUNCTION fail_forget() RETURNS trigger LANGUAGE plpgsql AS "
                "$$BEGIN RAISE EXCEPTION 'injected fault'; END$$",
                "CREATE TRIGGER fail_forget BEFORE UPDATE OF record ON events FOR EACH ROW "
                f"WHEN (OLD.agent = '{agent}') EXECUTE FUNCTION fail_forget()",
            ],
            ["DROP TRIGGER fail_forget ON events", "DROP FUNCTION fail_forget()"],
        )
    return (
        [
            "CREATE TRIGGER fail_forget BEFORE UPDATE OF record ON events "
            f"WHEN OLD.agent = '{agent}' BEGIN SELECT RAISE(ABORT, 'injected fault'); END"
        ],
        ["DROP TRIGGER fail_forget"],
    )


@pytest.mark.allow_internal_errors
async def test_failure_inside_the_transaction_erases_nothing(
    query_client: httpx.AsyncClient, agent_name: str, query_db: str
) -> None:
    written = await log(query_client, agent_name, "user_message", {"uid": "atomic", "t": "zeta"})
    await search(query_client, "zeta", agent=agent_name)  # indexed
    create, drop = _fault_sql(query_db, agent_name)
    with sql_connection(query_db) as db:
        for statement in create:
            db.execute(statement)
    try:
        response = await forget(
            query_client, {"filter_key": "uid", "filter_value": "atomic", "agent": agent_name}
        )
    finally:
        with sql_connection(query_db) as db:
            for statement in drop:
                db.execute(statement)
    assert response.status_code == 500
    event = (await query_client.get(f"/v1/events/{written['event_id']}")).json()
    assert event["data"]["uid"] == "atomic"
    assert ids(await search(query_client, "zeta", agent=agent_name)) == [written["event_id"]]
    again = (
        await forget(
            query_client, {"filter_key": "uid", "filter_value": "atomic", "agent": agent_name}
        )
    ).json()
    assert again["deleted_events"] == 1
    assert ids(await search(query_client, "zeta", agent=agent_name)) == []


def _file_bytes(db: str) -> bytes:
    return b"".join(
        Path(db + suffix).read_bytes() for suffix in ("", "-wal") if Path(db + suffix).exists()
    )


def test_case_forget_content_is_not_in_the_database_file(
    server_factory: Any, tmp_path: Path
) -> None:
    """Erased values must not be recoverable from the file: secure_delete zeroes freed cells
    and pages, the FTS5 segments are merged, the WAL is checkpointed."""
    db = str(tmp_path / "forget.db")
    server = server_factory(db=db)
    secret = "Zyxwvut-4471-secretvalue"
    agent = "forget-file"
    items = [
        {
            "agent": agent,
            "event": "user_message",
            "session_id": f"s{i % 7}",
            "data": {
                "user_id": "victim" if i % 10 == 0 else f"user-{i}",
                "text": (f"my card is {secret} please refund" if i % 10 == 0 else f"hello {i}")
                + " filler" * 40,
            },
        }
        for i in range(400)
    ]
    with httpx.Client(base_url=server.url, headers=server.headers(), timeout=30) as client:
        response = client.post("/v1/events/batch", json={"events": items})
        assert response.status_code == 200 and response.json()["failed"] == 0
        hits = client.post("/v1/search", json={"query": secret, "agent": agent, "limit": 100})
        assert len(hits.json()["results"]) == 40
        with sqlite3.connect(db) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        assert secret.encode() in _file_bytes(db)  # the check below can fail
        answer = client.request(
            "DELETE", "/v1/memory/forget", json={"filter_key": "user_id", "filter_value": "victim"}
        ).json()
        assert answer["deleted_events"] == 40
        chain = client.get("/v1/events/chain", params={"agent": agent}).json()
        assert chain["intact"] and chain["erased"] == 40
        assert (
            client.post("/v1/search", json={"query": secret, "agent": agent}).json()["results"]
            == []
        )
    server.stop()
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    content = _file_bytes(db)
    assert secret.encode() not in content
    assert b"secretvalue" not in content  # nor the distinctive token in the FTS5 index
    assert b"zyxwvut" not in content.lower()


async def test_forget_deletes_embeddings_too(
    query_db: str,
    agent_name: str,
    embeddings_server: Any,
) -> None:
    from agentledger.server import Settings, create_app
    from agentledger.server._settings import EmbeddingConfig

    from .conftest import QUERY_KEY

    embeddings = EmbeddingConfig(url=embeddings_server.url, model="bow-64")
    app = create_app(Settings(db=query_db, dev_key=QUERY_KEY, embeddings=embeddings))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport,
            base_url="http://localhost",
            headers={"Authorization": f"Bearer {QUERY_KEY}"},
        ) as client:
            gone = await log(client, agent_name, "user_message", {"uid": "e1", "text": "apples"})
            kept = await log(client, agent_name, "user_message", {"uid": "e2", "text": "apples"})
            await wait_embedded(client)
            semantic = await search(client, "apples", agent=agent_name, mode="semantic")
            assert set(ids(semantic)) == {gone["event_id"], kept["event_id"]}
            answer = (
                await forget(
                    client, {"filter_key": "uid", "filter_value": "e1", "agent": agent_name}
                )
            ).json()
            assert answer["embeddings_deleted"] == 1
            semantic = await search(client, "apples", agent=agent_name, mode="semantic")
            assert ids(semantic) == [kept["event_id"]]
