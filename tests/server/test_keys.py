"""API keys: scopes, agent binding, hashing at rest, revocation, expiry, loopback-only dev key."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from _stores import dump_text, sql_connection
from agentledger.server import Settings, StartupRefused, create_app
from agentledger.server._auth import new_key
from agentledger.server._store import open_store

DEV = "keys-dev-key"


@pytest.fixture
def db(store_db: str) -> str:
    return store_db


@pytest.fixture
async def app(db: str) -> AsyncIterator[FastAPI]:
    application = create_app(Settings(db=db, dev_key=DEV))
    yield application
    application.state.store.close()


def client_for(app: FastAPI, key: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://localhost",
        headers={"Authorization": f"Bearer {key}"},
    )


async def make_key(app: FastAPI, **body: Any) -> dict[str, Any]:
    async with client_for(app, DEV) as admin:
        response = await admin.post("/v1/keys", json={"name": "k", **body})
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


async def test_key_is_shown_once_and_stored_hashed(app: FastAPI, db: str) -> None:
    created = await make_key(app, scope="read_write")
    raw = created["key"]
    assert raw.startswith("al_") and len(raw) > 40
    async with client_for(app, DEV) as admin:
        listed = (await admin.get("/v1/keys")).json()
    assert [k["key_id"] for k in listed] == [created["key_id"]]
    assert "key" not in listed[0] and raw not in str(listed)
    with sql_connection(db) as conn:
        stored = conn.execute("SELECT key_hash, name, scope FROM api_keys").fetchall()
    dump = dump_text(db)
    assert [tuple(row) for row in stored] == [
        (hashlib.sha256(raw.encode()).hexdigest(), "k", "read_write")
    ]
    assert raw not in dump
    async with client_for(app, raw) as user:
        assert (await user.post("/v1/events", json=_ev("k1"))).status_code == 201


def _ev(agent: str) -> dict[str, Any]:
    return {"agent": agent, "event": "e", "data": {}}


async def test_read_only_key_gets_403_on_every_write_and_delete(app: FastAPI) -> None:
    raw = (await make_key(app, scope="read_only"))["key"]
    async with client_for(app, raw) as ro:
        assert (await ro.get("/v1/events", params={"agent": "ro"})).status_code == 200
        assert (await ro.get("/v1/agents")).status_code == 200
        writes = [
            await ro.post("/v1/events", json=_ev("ro")),
            await ro.post("/v1/events/batch", json={"events": [_ev("ro")]}),
            await ro.post("/v1/events/import", json={"events": []}),
            await ro.post("/v1/keys", json={"name": "x"}),
            await ro.delete("/v1/keys/key_whatever"),
        ]
    for response in writes:
        assert response.status_code == 403, response.request.url
        assert "read_only" in response.json()["detail"]


async def test_agent_bound_key(app: FastAPI) -> None:
    raw = (await make_key(app, agent="mine"))["key"]
    async with client_for(app, DEV) as admin:
        other = (await admin.post("/v1/events", json=_ev("theirs"))).json()
    async with client_for(app, raw) as bound:
        assert (await bound.post("/v1/events", json=_ev("mine"))).status_code == 201
        assert (await bound.post("/v1/events", json=_ev("theirs"))).status_code == 403
        batch = (
            await bound.post("/v1/events/batch", json={"events": [_ev("mine"), _ev("theirs")]})
        ).json()
        assert [r["ok"] for r in batch["results"]] == [True, False]
        assert batch["results"][1]["status"] == 403
        assert (await bound.get("/v1/events", params={"agent": "theirs"})).status_code == 403
        assert (await bound.get(f"/v1/events/{other['event_id']}")).status_code == 404
        assert (await bound.get(f"/v1/events/{other['event_id']}/why")).status_code == 404
        assert [a["agent"] for a in (await bound.get("/v1/agents")).json()] == ["mine"]
        assert (await bound.get("/v1/keys")).status_code == 403
        assert (await bound.get("/v1/events/chain", params={"agent": "theirs"})).status_code == 403


async def test_bound_key_why_stops_at_other_agents(app: FastAPI) -> None:
    raw = (await make_key(app, agent="child-agent"))["key"]
    async with client_for(app, DEV) as admin:
        parent = (await admin.post("/v1/events", json=_ev("parent-agent"))).json()
        child = (
            await admin.post(
                "/v1/events", json={**_ev("child-agent"), "parent_id": parent["event_id"]}
            )
        ).json()
    async with client_for(app, raw) as bound:
        why = (await bound.get(f"/v1/events/{child['event_id']}/why")).json()
    assert why["scoped_agent_limited"] and why["chain_length"] == 1


async def test_revoked_and_expired_keys_are_401(app: FastAPI, db: str) -> None:
    created = await make_key(app)
    async with client_for(app, DEV) as admin:
        revoked = await admin.delete(f"/v1/keys/{created['key_id']}")
        assert revoked.status_code == 200 and revoked.json()["revoked_at"]
        assert (await admin.delete(f"/v1/keys/{created['key_id']}")).status_code == 404
    async with client_for(app, created["key"]) as user:
        assert (await user.get("/v1/agents")).status_code == 401
    raw, record = new_key(name="old", agent=None, scope="read_write", expires_in_days=1)
    record.expires_at = "2000-01-01T00:00:00.000000+00:00"
    app.state.store.create_key(record)
    async with client_for(app, raw) as user:
        response = await user.get("/v1/agents")
    assert response.status_code == 401 and "expired" in response.json()["detail"]


async def test_key_create_validation(app: FastAPI) -> None:
    async with client_for(app, DEV) as admin:
        for body in (
            {"name": ""},
            {"name": "x", "scope": "admin"},
            {"name": "x", "expires_in_days": 0},
            {"name": "x", "agent": "a/b"},
            {"name": "x", "extra": 1},
        ):
            assert (await admin.post("/v1/keys", json=body)).status_code == 422, body


def test_dev_key_alone_refuses_a_public_bind(db: str) -> None:
    with pytest.raises(StartupRefused, match="loopback"):
        create_app(Settings(db=db, host="0.0.0.0", dev_key=DEV))


async def test_public_bind_with_real_keys_ignores_the_dev_key(db: str) -> None:
    store = open_store(db)
    raw, record = new_key(name="prod", agent=None, scope="read_write", expires_in_days=None)
    store.create_key(record)
    store.close()
    app = create_app(Settings(db=db, host="0.0.0.0", dev_key=DEV))
    try:
        async with client_for(app, DEV) as dev:
            assert (await dev.get("/v1/agents")).status_code == 401
        async with client_for(app, raw) as real:
            assert (await real.get("/v1/agents")).status_code == 200
    finally:
        app.state.store.close()


def test_serve_cli_refuses_public_bind_without_keys(db: str) -> None:
    exe = Path(sys.executable).parent / "agentledger"
    proc = subprocess.run(
        [
            str(exe),
            "serve",
            "--db",
            db,
            "--host",
            "0.0.0.0",
            "--port",
            "1",
            "--dev-key",
            DEV,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "refusing to serve" in proc.stderr


def test_keys_admin_cli_bootstraps_a_key(db: str) -> None:
    exe = Path(sys.executable).parent / "agentledger"
    proc = subprocess.run(
        [str(exe), "keys-admin", "create", "--db", db, "--name", "ops", "--scope", "read_only"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    raw = proc.stdout.strip()
    store = open_store(db)
    try:
        record = store.key_by_hash(hashlib.sha256(raw.encode()).hexdigest())
    finally:
        store.close()
    assert record is not None and record.scope == "read_only" and record.name == "ops"


async def test_loopback_without_any_key_starts_but_answers_401(db: str) -> None:
    app = create_app(Settings(db=db, host="127.0.0.1", dev_key=None))
    try:
        async with client_for(app, "anything") as client:
            assert (await client.get("/v1/agents")).status_code == 401
            assert (await client.get("/health")).status_code == 200
    finally:
        app.state.store.close()
