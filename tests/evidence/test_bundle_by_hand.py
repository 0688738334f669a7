"""docs/pages/evidence.md, "Evidence bundles": the steps of "Verifying by hand" redone with
hashlib, json and cryptography only (no agentledger code), every form of public key the page
lists, and a bundle written without matplotlib."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import httpx
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from _bundles import active_key, bundle_of, files_of, write_graph
from _servers import ServerFactory, ServerProcess
from agentledger.evidence import verify_bundle


def _compact(value: object) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def test_verifying_by_hand(ledger_server: ServerProcess) -> None:
    event = write_graph(ledger_server, "by-hand")[2]
    files = files_of(bundle_of(ledger_server, event))
    raw = bytes.fromhex(active_key(ledger_server))
    public = Ed25519PublicKey.from_public_bytes(raw)
    # 1. manifest
    manifest = json.loads(files["manifest.json"])
    signature = base64.b64decode(manifest.pop("signature"))
    public.verify(signature, b"agentledger evidence bundle v1\n" + _compact(manifest))
    assert manifest["key_id"] == "ed25519:" + hashlib.sha256(raw).hexdigest()[:16]
    assert manifest["files"] == {
        name: hashlib.sha256(data).hexdigest()
        for name, data in files.items()
        if name != "manifest.json"
    }
    segment = json.loads(files["segments/0.json"])
    previous = segment["previous_hash"] or ""
    for row in segment["rows"]:
        record = row["record"].encode()
        # 2. records, 3. links
        assert hashlib.sha256(record).hexdigest() == row["checksum"]
        assert hashlib.sha256(previous.encode() + record).hexdigest() == row["chain_hash"]
        previous = row["chain_hash"]
    # 4. head
    head = segment["head"]
    last = segment["rows"][-1]
    assert (last["sequence_no"], last["chain_hash"]) == (head["sequence_no"], head["chain_hash"])
    fields = ("agent", "chain_hash", "hmac_links", "key_id", "sequence_no", "signed_at")
    payload = b"agentledger signed chain head v1\n" + _compact({k: head[k] for k in fields})
    public.verify(base64.b64decode(head["signature"]), payload)
    # 5. lineage
    rows = {r["sequence_no"]: r["event_id"] for r in segment["rows"]}
    for item in json.loads(files["lineage.json"])["events"]:
        assert rows[item["sequence_no"]] == item["event_id"]


def test_every_form_of_public_key(ledger_server: ServerProcess, tmp_path: Path) -> None:
    event = write_graph(ledger_server, "key-forms")[2]
    bundle = bundle_of(ledger_server, event)
    raw = bytes.fromhex(active_key(ledger_server))
    pem = (
        Ed25519PublicKey.from_public_bytes(raw)
        .public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    listing = tmp_path / "signing-keys.json"
    listing.write_text(httpx.get(f"{ledger_server.url}/v1/signing-keys").text)
    pem_file = tmp_path / "key.pem"
    pem_file.write_text(pem)
    for form in (
        raw,
        raw.hex(),
        base64.b64encode(raw).decode(),
        pem,
        pem_file,
        listing,
        str(listing),
    ):
        assert verify_bundle(bundle, public_key=form).ok, form


def test_without_matplotlib_the_bundle_has_no_graph_and_says_so(
    server_factory: ServerFactory, tmp_path: Path
) -> None:
    blocked = tmp_path / "no-matplotlib"
    (blocked / "matplotlib").mkdir(parents=True)
    (blocked / "matplotlib" / "__init__.py").write_text("raise ImportError('not installed')\n")
    server = server_factory(env={"PYTHONPATH": str(blocked)})
    event = write_graph(server, "no-graph")[2]
    bundle = bundle_of(server, event)
    files = files_of(bundle)
    assert "graph.png" not in files
    note = json.loads(files["manifest.json"])["graph"]
    assert "matplotlib is not installed" in note
    assert "matplotlib is not installed" in files["summary.md"].decode()
    assert verify_bundle(bundle, public_key=active_key(server)).ok
