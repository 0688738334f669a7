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
