"""Signed chain heads on a real ``agentledger serve``, SQLite and PostgreSQL
(docs/pages/evidence.md, "Signed chain heads"): the background signer signs after writes and
publishes a file per head; signing on demand and listing, with their 4xx answers; rotation;
an unusable key file is a 503; two processes on one PostgreSQL database sign a head once."""

from __future__ import annotations

import os
import time
from pathlib import Path

import httpx
import pytest

from _servers import ServerFactory
from _stores import POSTGRES_ONLY
from agentledger.client import AsyncLedger, NotFoundError
from agentledger.protocol.head_files import head_file_paths, load_head_file

from ._helpers import signing_server, verify, wait_for, write


def test_background_signer_signs_after_writes_and_publishes(
    server_factory: ServerFactory, store_db: str, tmp_path: Path
) -> None:
    """Section "Signed chain heads", "When heads are signed"."""
    server = signing_server(server_factory, store_db, tmp_path, interval_s=0.2)
    published = tmp_path / "published"
    write(server, "bg-agent", 3)
    (first,) = wait_for(lambda: head_file_paths(published, "bg-agent"))
    head = load_head_file(first)
    assert (head["agent"], head["sequence_no"]) == ("bg-agent", 3)
    verify(server, head)
    assert first.name == f"{3:012d}-{head['key_id'].replace(':', '_')}.json"
    assert os.stat(tmp_path / "signing-keys.json").st_mode & 0o777 == 0o600

    write(server, "bg-agent", 2, start=3)
    files = wait_for(lambda: head_file_paths(published, "bg-agent")[1:])
    assert load_head_file(files[0])["sequence_no"] == 5
    listed = httpx.get(
        f"{server.url}/v1/signed-heads",
        params={"agent": "bg-agent"},
        headers=server.headers(),
    ).json()["heads"]
    assert [h["sequence_no"] for h in listed] == [5, 3]  # newest first
    # nothing moved: later rounds sign nothing more
    time.sleep(1.0)  # five rounds
    assert len(head_file_paths(published)) == 2


async def test_sign_on_demand_list_and_rotate_with_the_client(
    server_factory: ServerFactory, store_db: str, tmp_path: Path
) -> None:
    """Section "Signed chain heads", "From Python"."""
    server = signing_server(server_factory, store_db, tmp_path)
    write(server, "demand", 4)
    async with AsyncLedger(server.url, server.api_key, "demand", spill_dir=None) as ledger:
        keys = await ledger.signing_keys()
        assert [k.active for k in keys] == [True] and len(keys[0].fingerprint) == 64
        head = await ledger.sign_head()
        assert (head.agent, head.sequence_no, head.key_id) == ("demand", 4, keys[0].key_id)
        verify(server, head.as_wire())
        rotation = await ledger.rotate_signing_key()
        assert rotation.retired_key_id == keys[0].key_id != rotation.key_id
        assert [k.key_id for k in rotation.keys] == [keys[0].key_id, rotation.key_id]
        second = await ledger.sign_head()
        assert second.key_id == rotation.key_id
        heads = await ledger.signed_heads(limit=10)
        assert [h.key_id for h in heads] == [rotation.key_id, keys[0].key_id]
        for old in heads:
            verify(server, old.as_wire())  # the retired key still verifies its head
        assert len(await ledger.signed_heads(limit=1)) == 1
        with pytest.raises(NotFoundError):
            await ledger.sign_head("nobody-here")
    files = head_file_paths(tmp_path / "published", "demand")
    assert len(files) == 2  # on-demand heads are published too


def test_routes_answer_bad_input_with_a_4xx(
    server_factory: ServerFactory, store_db: str, tmp_path: Path
) -> None:
    """Section "Signed chain heads", "Routes": unknown agent 404, bad limit or agent 422."""
    server = signing_server(server_factory, store_db, tmp_path)
    write(server, "known", 1)
    url, headers = server.url, server.headers()
    unknown = httpx.post(f"{url}/v1/signed-heads", json={"agent": "ghost"}, headers=headers)
    assert unknown.status_code == 404 and unknown.json()["detail"][0]["loc"] == ["body", "agent"]
    listed = httpx.get(f"{url}/v1/signed-heads", params={"agent": "ghost"}, headers=headers)
    assert listed.status_code == 404 and "ghost" in listed.text
    for limit in ("0", "1001", "x"):
        bad = httpx.get(
            f"{url}/v1/signed-heads", params={"agent": "known", "limit": limit}, headers=headers
        )
        assert bad.status_code == 422 and bad.json()["detail"][0]["loc"] == ["query", "limit"]
    missing = httpx.get(f"{url}/v1/signed-heads", headers=headers)
    assert missing.status_code == 422 and missing.json()["detail"][0]["loc"] == ["query", "agent"]
    extra = httpx.post(f"{url}/v1/signed-heads", json={"agent": "known", "x": 1}, headers=headers)
    assert extra.status_code == 422
    empty = httpx.get(f"{url}/v1/signed-heads", params={"agent": "known"}, headers=headers)
    assert empty.status_code == 200 and empty.json() == {"agent": "known", "heads": []}


@pytest.mark.parametrize("store_kind", ["sqlite"])
def test_an_unusable_key_file_is_a_503_saying_why(
    server_factory: ServerFactory, store_db: str, tmp_path: Path
) -> None:
    """Section "Signed chain heads", "Routes": the operator's to fix, not a 500."""
    keys = tmp_path / "signing-keys.json"
    keys.write_text("{not json")
    keys.chmod(0o600)
    server = signing_server(server_factory, store_db, tmp_path)
    write(server, "k", 1)
    headers = server.headers()
    for answer in (
        httpx.post(f"{server.url}/v1/signed-heads", json={"agent": "k"}, headers=headers),
        httpx.post(f"{server.url}/v1/signing-keys/rotate", headers=headers),
        httpx.get(f"{server.url}/v1/signing-keys"),
    ):
        assert answer.status_code == 503, answer.text
        assert "signing keys unavailable" in answer.text and "unreadable" in answer.text


@POSTGRES_ONLY
def test_two_processes_on_one_postgres_sign_each_head_once(
    server_factory: ServerFactory, store_db: str, tmp_path: Path
) -> None:
    """Section "Signed chain heads", "Several server processes": the round's advisory lock."""
    first = signing_server(server_factory, store_db, tmp_path, interval_s=0.05)
    second = signing_server(server_factory, store_db, tmp_path, interval_s=0.05)
    for round_no in range(15):
        write(first if round_no % 2 else second, "shared", 2, start=2 * round_no)
        wait_for(
            lambda n=round_no: any(
                load_head_file(p)["sequence_no"] == 2 * (n + 1)
                for p in head_file_paths(tmp_path / "published", "shared")
            )
        )
    heads = httpx.get(
        f"{first.url}/v1/signed-heads",
        params={"agent": "shared", "limit": 100},
        headers=first.headers(),
    ).json()["heads"]
    numbers = [h["sequence_no"] for h in heads]
    assert len(numbers) == len(set(numbers)), numbers  # no head signed twice
    assert numbers[0] == 30


def test_signing_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Section "Signed chain heads", "When heads are signed": default 60 s, 0 on demand."""
    from agentledger.server import Settings

    assert (Settings().sign_interval_s, Settings().publish_heads_dir) == (60.0, None)
    monkeypatch.setenv("AGENTLEDGER_SIGN_INTERVAL_S", "0")
    monkeypatch.setenv("AGENTLEDGER_PUBLISH_HEADS_DIR", "/srv/heads")
    monkeypatch.setenv("AGENTLEDGER_PUBLISH_HEADS_URL", "https://audit.example/heads")
    settings = Settings.from_env()
    assert settings.sign_interval_s == 0
    assert settings.publish_heads_dir == "/srv/heads"
    assert settings.publish_heads_url == "https://audit.example/heads"
    for bad in ("-1", "soon"):
        monkeypatch.setenv("AGENTLEDGER_SIGN_INTERVAL_S", bad)
        with pytest.raises(ValueError, match="AGENTLEDGER_SIGN_INTERVAL_S"):
            Settings.from_env()
    monkeypatch.setenv("AGENTLEDGER_SIGN_INTERVAL_S", "0")
    assert Settings().evidence_max_rows == 200_000
    monkeypatch.setenv("AGENTLEDGER_EVIDENCE_MAX_ROWS", "5000")
    assert Settings.from_env().evidence_max_rows == 5000
    for bad in ("0", "many"):
        monkeypatch.setenv("AGENTLEDGER_EVIDENCE_MAX_ROWS", bad)
        with pytest.raises(ValueError, match="AGENTLEDGER_EVIDENCE_MAX_ROWS"):
            Settings.from_env()


@pytest.mark.parametrize("store_kind", ["sqlite"])
def test_the_publish_webhook_gets_each_head(
    server_factory: ServerFactory, store_db: str, tmp_path: Path
) -> None:
    """Section "Signed chain heads", "When heads are signed": AGENTLEDGER_PUBLISH_HEADS_URL."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    received: list[dict[str, object]] = []

    class Hook(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    hook = HTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=hook.serve_forever, daemon=True).start()
    try:
        server = signing_server(
            server_factory,
            store_db,
            tmp_path,
            AGENTLEDGER_PUBLISH_HEADS_URL=f"http://127.0.0.1:{hook.server_port}/heads",
        )
        write(server, "hooked", 2)
        signed = httpx.post(
            f"{server.url}/v1/signed-heads", json={"agent": "hooked"}, headers=server.headers()
        ).json()
        wait_for(lambda: received)
    finally:
        hook.shutdown()
    assert received == [signed]
    verify(server, received[0])
