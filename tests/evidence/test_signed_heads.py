"""Signed chain heads on a real store: the key file (0600, rotation keeps old public keys),
signatures that verify with the published public key, published head files."""

from __future__ import annotations

import base64
import os
import stat
from pathlib import Path

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from agentledger.protocol.signed_heads import head_payload
from agentledger.server import Settings, create_app
from agentledger.server._signing._heads import HeadSigner, SigningRefused
from agentledger.server._signing._keyring import Keyring, KeyringError
from agentledger.server._signing._publish import HeadPublisher, read_published


def _write(app: object, agent: str, count: int) -> None:
    from fastapi.testclient import TestClient

    from agentledger.server._auth import new_key

    raw, record = new_key(name="t", agent=None, scope="read_write", expires_in_days=None)
    app.state.store.create_key(record)  # type: ignore[attr-defined]
    with TestClient(app) as client:  # type: ignore[arg-type]
        events = [{"agent": agent, "event": "note", "data": {"i": i}} for i in range(count)]
        answer = client.post(
            "/v1/events/batch", json={"events": events}, headers={"Authorization": f"Bearer {raw}"}
        )
        assert answer.status_code == 200, answer.text


def _verify(keyring: Keyring, head: dict[str, object]) -> None:
    keys = {k["key_id"]: k for k in keyring.public_keys()}
    public = Ed25519PublicKey.from_public_bytes(
        base64.b64decode(keys[head["key_id"]]["public_key"])
    )
    public.verify(base64.b64decode(str(head["signature"])), head_payload(head))


def test_key_file_is_private_and_rotation_keeps_old_keys(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    ring = Keyring(str(path))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    first = ring.active_id
    second = ring.rotate()
    assert first != second
    listed = Keyring(str(path)).public_keys()
    assert [k["key_id"] for k in listed] == [first, second]
    assert listed[0]["retired_at"] and not listed[0]["active"] and listed[1]["active"]
    assert "private_key" not in path.read_text().split(second)[0].split(first)[1]
    os.chmod(path, 0o644)
    with pytest.raises(KeyringError, match="chmod 600"):
        Keyring(str(path))


def test_signed_head_verifies_stores_and_publishes(tmp_path: Path) -> None:
    app = create_app(Settings(db=str(tmp_path / "l.db")))
    _write(app, "signer", 5)
    store = app.state.store
    ring = Keyring(str(tmp_path / "keys.json"))
    publisher = HeadPublisher(str(tmp_path / "published"), None)
    signer = HeadSigner(store, ring, publisher)
    with pytest.raises(SigningRefused, match="no events"):
        signer.sign("nobody")
    head = signer.sign("signer")
    assert head["sequence_no"] == 5 and head["hmac_links"] is False
    _verify(ring, head)
    tampered = dict(head, sequence_no=4)
    with pytest.raises(InvalidSignature):
        _verify(ring, tampered)
    assert signer.heads("signer") == [head]
    assert read_published(tmp_path / "published", "signer") == [head]
    assert signer.sign_changed() == 0  # nothing moved since
    ring.rotate()
    _verify(ring, head)  # an old head still verifies after rotation
    store.close()


def test_published_head_catches_a_rewritten_ledger(tmp_path: Path) -> None:
    """Rewrite event 2 in the database file and recompute every later link, seal and the
    agent head: the chain verifies on its own, the published head's anchor does not."""
    import sqlite3

    import orjson
    from fastapi.testclient import TestClient

    from agentledger.server._auth import new_key
    from agentledger.server._chain import ChainHasher

    db = str(tmp_path / "l.db")
    app = create_app(Settings(db=db))
    _write(app, "victim", 5)
    signer = HeadSigner(
        app.state.store, Keyring(str(tmp_path / "k.json")), HeadPublisher(str(tmp_path / "p"), None)
    )
    signer.sign("victim")
    app.state.store.close()

    hasher = ChainHasher(None)
    con = sqlite3.connect(db)
    rows = con.execute(
        "SELECT sequence_no, record, received_at, importance FROM events "
        "WHERE agent = 'victim' ORDER BY sequence_no"
    ).fetchall()
    previous = None
    for seq, record, received_at, importance in rows:
        rec = orjson.loads(record)
        if seq == 2:
            rec["data"] = {"i": "rewritten"}
        body = orjson.dumps(rec, option=orjson.OPT_SORT_KEYS)
        link = hasher.link(previous, body)
        con.execute(
            "UPDATE events SET record = ?, checksum = ?, chain_hash = ?, seal = ? "
            "WHERE agent = 'victim' AND sequence_no = ?",
            (
                body,
                hasher.checksum(body),
                link,
                hasher.column_seal(link, received_at, importance),
                seq,
            ),
        )
        previous = link
    con.execute("UPDATE agents SET last_hash = ? WHERE agent = 'victim'", (previous,))
    con.commit()
    con.close()

    app = create_app(Settings(db=db))
    raw, record = new_key(name="t", agent=None, scope="read_only", expires_in_days=None)
    app.state.store.create_key(record)
    auth = {"Authorization": f"Bearer {raw}"}
    with TestClient(app) as client:
        plain = client.get("/v1/events/chain", params={"agent": "victim"}, headers=auth).json()
        assert plain["problems"] == []  # the rewrite is consistent on its own
        (head,) = read_published(tmp_path / "p", "victim")
        anchored = client.get(
            "/v1/events/chain",
            params={
                "agent": "victim",
                "after_seq": head["sequence_no"],
                "anchor": head["chain_hash"],
            },
            headers=auth,
        ).json()
    assert [p["kind"] for p in anchored["problems"]] == ["anchor_mismatch"]


def test_signing_keys_route_lists_the_key_file(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    keys = tmp_path / "custom-keys.json"
    app = create_app(Settings(db=str(tmp_path / "l.db"), signing_keys=str(keys)))
    with TestClient(app) as client:
        listed = client.get("/v1/signing-keys").json()["keys"]
    assert [k["key_id"] for k in listed] == [Keyring(str(keys)).active_id]
    assert "private_key" not in listed[0] and len(listed[0]["fingerprint"]) == 64


def test_a_key_file_others_can_read_is_a_503_not_a_crash(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    keys = tmp_path / "shared-keys.json"
    Keyring(str(keys))
    keys.chmod(0o644)
    app = create_app(Settings(db=str(tmp_path / "l.db"), signing_keys=str(keys)))
    with TestClient(app) as client:
        response = client.get("/v1/signing-keys")
    assert response.status_code == 503
    assert "chmod 600" in response.json()["detail"]


def test_a_postgres_ledger_keeps_its_key_out_of_the_working_directory() -> None:
    from agentledger.server._signing._keyring import default_keyring_path

    path = Path(default_keyring_path("postgresql://postgres@127.0.0.1/test"))
    assert path == Path.home() / ".agentledger" / "signing-keys.json"


def test_webhook_is_retried_until_delivered() -> None:
    """A real HTTP server answers 503 twice, then 200: the head arrives once, after retries."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    received: list[dict[str, object]] = []
    answers = [503, 503, 200]

    class Hook(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            status = answers.pop(0)
            if status == 200:
                received.append(json.loads(body))
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    publisher = HeadPublisher(None, f"http://127.0.0.1:{server.server_port}/heads", backoff_s=0.01)
    head = {"agent": "a", "sequence_no": 3, "chain_hash": "0" * 64, "key_id": "k"}
    try:
        publisher.publish(head)  # returns at once; the POST runs on the publisher's thread
        assert publisher.join(timeout_s=10)
    finally:
        publisher.close()
        server.shutdown()
    assert received == [head] and answers == []
    assert (publisher.delivered, publisher.failed) == (1, 0)
