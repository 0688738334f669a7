"""Forget finds a subject wherever it sits: ``data``, ``metadata`` and session ids (renamed to a
pseudonym so the session stays one session); ``dry_run`` says where it matched; the chain
verifies afterwards and names what forget changed; after forget and ``VACUUM`` none of the
subject's values is in the SQLite file (docs: Query features, "Forget")."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import httpx

from agentledger.client import Ledger

from ._helpers import batch, ids, search

EMAIL = "alice.smith@example.com"


async def forget(client: httpx.AsyncClient, body: dict[str, Any], **params: Any) -> Any:
    response = await client.request("DELETE", "/v1/memory/forget", json=body, params=params)
    assert response.status_code == 200, response.text
    return response.json()


async def test_forget_matches_metadata_and_says_where(
    query_client: httpx.AsyncClient, agent_name: str
) -> None:
    items = [
        {
            "agent": agent_name,
            "event": "user_message",
            "data": {"text": "a"},
            "metadata": {"user_id": "u-2"},
        },
        {"agent": agent_name, "event": "tool_call", "data": {"user_id": "u-2", "tool": "crm"}},
        {
            "agent": agent_name,
            "event": "tool_result",
            "data": {"user_id": "u-2"},
            "metadata": {"tags": {"user_id": ["u-2"]}},
        },
        {
            "agent": agent_name,
            "event": "user_message",
            "data": {"text": "b"},
            "metadata": {"user_id": "u-23"},
        },
    ]
    written = [r["event_id"] for r in await batch(query_client, items)]
    scope = {"filter_key": "user_id", "filter_value": "u-2", "agent": agent_name}
    dry = await forget(query_client, {**scope, "dry_run": True})
    assert dry["deleted_events"] == 3 and dry["dry_run"] is True
    assert dry["matched_in"] == {"data": 2, "metadata": 2}
    assert set(dry["event_ids"]) == set(written[:3])
    assert (await query_client.get(f"/v1/events/{written[0]}")).json()["metadata"] == {
        "user_id": "u-2"
    }
    done = await forget(query_client, scope)
    assert done["deleted_events"] == 3 and done["matched_in"] == dry["matched_in"]
    first = (await query_client.get(f"/v1/events/{written[0]}")).json()
    assert first["erased"] is True and not first.get("metadata")
    kept = (await query_client.get(f"/v1/events/{written[3]}")).json()
    assert kept["metadata"] == {"user_id": "u-23"} and not kept.get("erased")
    chain = (await query_client.get("/v1/events/chain", params={"agent": agent_name})).json()
    assert chain["intact"] and chain["erased"] == 3, chain


async def test_a_session_id_naming_the_subject_gets_one_pseudonym(
    query_client: httpx.AsyncClient, agent_name: str
) -> None:
    session = f"chat-{EMAIL}"
    other = "chat-bob@example.com"
    items = [
        {
            "agent": agent_name,
            "event": "user_message",
            "session_id": session,
            "data": {"email": EMAIL, "text": "hello refund"},
        },
        {
            "agent": agent_name,
            "event": "llm_end",
            "session_id": session,
            "data": {"text": "sure refund"},
            "metadata": {"thread": session},
        },
        {
            "agent": agent_name,
            "event": "tool_result",
            "session_id": session,
            "data": {"echo": session, "status": "zanzibar"},
        },
        {
            "agent": agent_name,
            "event": "user_message",
            "session_id": other,
            "data": {"text": "bob here"},
        },
    ]
    written = [r["event_id"] for r in await batch(query_client, items)]
    dry = await forget(
        query_client,
        {"filter_key": "email", "filter_value": EMAIL, "agent": agent_name},
        dry_run="true",
    )
    assert dry["deleted_events"] == 1 and dry["events_amended"] == 2
    assert len(dry["sessions_renamed"]) == 1
    sessions = (await query_client.get("/v1/sessions", params={"agent": agent_name})).json()
    assert session in str(sessions)  # dry run changed nothing

    done = await forget(
        query_client, {"filter_key": "email", "filter_value": EMAIL, "agent": agent_name}
    )
    assert done["deleted_events"] == 1 and done["events_amended"] == 2
    [pseudonym] = done["sessions_renamed"]
    assert pseudonym.startswith("forgotten-") and EMAIL not in pseudonym
    assert "renamed 1 session" in done["message"]

    stored = [(await query_client.get(f"/v1/events/{e}")).json() for e in written]
    assert [s["session_id"] for s in stored] == [pseudonym, pseudonym, pseudonym, other]
    assert stored[0]["erased"] is True
    assert stored[1]["metadata"] == {"thread": pseudonym}
    assert stored[2]["data"] == {"echo": pseudonym, "status": "zanzibar"}
    listing = (await query_client.get("/v1/sessions", params={"agent": agent_name})).text
    assert EMAIL not in listing and pseudonym in listing
    replay = await query_client.get(
        f"/v1/sessions/{pseudonym}/events", params={"agent": agent_name}
    )
    assert replay.status_code == 200 and EMAIL not in replay.text
    assert [e["event_id"] for e in replay.json()["events"]] == written[:3]
    # the kept events stay searchable under their new session, the old id is gone from search
    assert set(ids(await search(query_client, "zanzibar", agent=agent_name))) == {written[2]}

    chain = (await query_client.get("/v1/events/chain", params={"agent": agent_name})).json()
    assert chain["intact"], chain
    assert chain["erased"] == 1 and chain["amended"] == 2
    assert "2 with a session id replaced by forget" in chain["summary"]


async def test_an_earlier_tombstone_in_the_session_is_renamed_and_still_verifies(
    query_client: httpx.AsyncClient, agent_name: str
) -> None:
    session = f"support-{EMAIL}-2026"
    items = [
        {
            "agent": agent_name,
            "event": "user_message",
            "session_id": session,
            "data": {"card": "4111"},
        },
        {
            "agent": agent_name,
            "event": "user_message",
            "session_id": session,
            "data": {"text": "x"},
        },
    ]
    written = [r["event_id"] for r in await batch(query_client, items)]
    await forget(query_client, {"filter_key": "card", "filter_value": "4111", "agent": agent_name})
    # the value is only in the session id now
    done = await forget(
        query_client, {"filter_key": "email", "filter_value": EMAIL, "agent": agent_name}
    )
    assert done["deleted_events"] == 0 and done["events_amended"] == 1
    [pseudonym] = done["sessions_renamed"]
    tomb = (await query_client.get(f"/v1/events/{written[0]}")).json()
    assert tomb["erased"] and tomb["session_id"] == pseudonym
    chain = (await query_client.get("/v1/events/chain", params={"agent": agent_name})).json()
    assert chain["intact"] and chain["erased"] == 1 and chain["amended"] == 1, chain


async def test_a_session_id_only_sharing_a_prefix_is_left_alone(
    query_client: httpx.AsyncClient, agent_name: str
) -> None:
    items = [
        {"agent": agent_name, "event": "note", "session_id": "sess-u-23", "data": {}},
        {"agent": agent_name, "event": "note", "session_id": "sess-U-2", "data": {}},
        {"agent": agent_name, "event": "note", "session_id": "xu-2", "data": {}},
    ]
    await batch(query_client, items)
    done = await forget(
        query_client, {"filter_key": "user_id", "filter_value": "u-2", "agent": agent_name}
    )
    assert done["sessions_renamed"] == [] and done["events_amended"] == 0


async def test_an_amended_record_edited_afterwards_is_content_changed(
    query_client: httpx.AsyncClient, agent_name: str, query_db: str
) -> None:
    """The amendment mark covers the rewritten record: a later edit by SQL is caught."""
    if not query_db.endswith(".db"):
        return  # the SQL edit below is SQLite's; the rule is the store-independent verifier's
    session = f"s-{EMAIL}"
    written = await batch(
        query_client,
        [
            {"agent": agent_name, "event": "note", "session_id": session, "data": {"n": i}}
            for i in range(3)
        ],
    )
    await forget(query_client, {"filter_key": "email", "filter_value": EMAIL, "agent": agent_name})
    with sqlite3.connect(query_db) as conn:
        conn.execute(
            "UPDATE events SET record = replace(record, '\"n\":1', '\"n\":9'), "
            "checksum = NULL WHERE event_id = ?",
            (written[1]["event_id"],),
        )
    chain = (await query_client.get("/v1/events/chain", params={"agent": agent_name})).json()
    assert not chain["intact"]
    assert [(p["kind"], p["sequence_no"]) for p in chain["problems"]] == [("content_changed", 2)]


def _file_bytes(db: str) -> bytes:
    return b"".join(
        Path(db + suffix).read_bytes() for suffix in ("", "-wal") if Path(db + suffix).exists()
    )


def test_after_forget_and_vacuum_no_value_of_the_subject_is_in_the_file(
    server_factory: Any, tmp_path: Path
) -> None:
    """Query features, "Forget": values in ``data``, in ``metadata`` and in the session id."""
    db = str(tmp_path / "subject.db")
    server = server_factory(db=db)
    agent = "forget-subject"
    phone = "+47-9911-2233"
    note = "Qwertzuiop-allergic-to-penicillin"
    session = f"chat-{EMAIL}"
    items: list[dict[str, Any]] = []
    for i in range(300):
        mine = i % 10 == 0
        items.append(
            {
                "agent": agent,
                "event": "user_message",
                "session_id": session if mine else f"chat-user{i}@example.org",
                "data": {
                    "text": f"{note} call me" if mine else f"hello {i}",
                    "email": EMAIL if mine else f"u{i}@example.org",
                },
                "metadata": {
                    "phone": phone if mine else "none",
                    "email": EMAIL if mine else "other",
                },
            }
        )
    values = [EMAIL.encode(), phone.encode(), b"Qwertzuiop", b"penicillin"]
    with httpx.Client(base_url=server.url, headers=server.headers(), timeout=30) as client:
        response = client.post("/v1/events/batch", json={"events": items})
        assert response.status_code == 200 and response.json()["failed"] == 0
        # in the index before forget
        assert (
            len(
                client.post("/v1/search", json={"query": "Qwertzuiop", "agent": agent}).json()[
                    "results"
                ]
            )
            > 0
        )
        with sqlite3.connect(db) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        before = _file_bytes(db)
        assert all(v in before for v in values)  # the check below can fail
        with Ledger(server.url, server.api_key, agent, spill_dir=tmp_path / "spill") as ledger:
            answer = ledger.forget("email", EMAIL)  # the Python client's view of the answer
        assert answer.deleted_events == 30 and answer.matched_in == {"data": 30, "metadata": 30}
        assert len(answer.sessions_renamed) == 1 and answer.events_amended == 0
        chain = client.get("/v1/events/chain", params={"agent": agent}).json()
        assert chain["intact"] and chain["erased"] == 30, chain
    server.stop()
    with sqlite3.connect(db) as conn:
        conn.execute("VACUUM")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    content = _file_bytes(db)
    for value in values:
        assert value not in content, value
    assert b"qwertzuiop" not in content.lower()
