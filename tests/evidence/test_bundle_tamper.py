"""Every tampering of an evidence bundle is reported where it is (docs/pages/evidence.md,
"Evidence bundles"): a flipped byte in any record, a record edited with its checksum redone,
a dropped record, reordered records, a segment cut before its signed head, an edited head,
an edited file, and a key substituted for the server's."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from _bundles import active_key, bundle_of, files_of, rezip, segment, write_graph
from _servers import ServerProcess
from agentledger.evidence import Report, WrongKey, verify_bundle
from agentledger.protocol.signed_heads import head_payload, key_id, manifest_payload

RECORDS = 5  # write_graph's events, all in the lineage of its decision


@pytest.fixture(scope="module")
def signed(ledger_server: ServerProcess) -> tuple[bytes, str]:
    ids = write_graph(ledger_server, "tamper-bundle")
    return bundle_of(ledger_server, ids[2]), active_key(ledger_server)


def _with_segment(bundle: bytes, edit: Callable[[dict[str, Any]], None]) -> bytes:
    files = files_of(bundle)
    doc = segment(files)
    edit(doc)
    files["segments/0.json"] = orjson.dumps(doc)
    return rezip(files)


def _flip(record: str) -> str:
    """One byte of the record's ``data`` flipped (ASCII stays ASCII)."""
    raw = bytearray(record.encode())
    at = raw.index(b'"data":') + 9
    raw[at] ^= 0x01
    return raw.decode()


def _kinds(report: Report) -> set[tuple[str, int | None]]:
    return {(p.kind, p.sequence_no) for p in report.problems}


def test_untouched_bundle_verifies(signed: tuple[bytes, str]) -> None:
    bundle, key = signed
    report = verify_bundle(bundle, public_key=key)
    assert report.ok, [str(p) for p in report.problems]
    assert report.records == RECORDS and report.links_checked and not report.unanchored


@pytest.mark.parametrize("index", range(RECORDS))
def test_a_flipped_byte_in_any_record_is_reported_at_its_sequence_number(
    signed: tuple[bytes, str], index: int
) -> None:
    bundle, key = signed

    def flip(doc: dict[str, Any]) -> None:
        doc["rows"][index]["record"] = _flip(doc["rows"][index]["record"])

    report = verify_bundle(_with_segment(bundle, flip), public_key=key)
    assert ("record_checksum", index + 1) in _kinds(report)
    assert ("file_hash", None) in _kinds(report)
    problem = next(p for p in report.problems if p.kind == "record_checksum")
    assert problem.file == "segments/0.json" and problem.expected != problem.got
    assert f"#{index + 1}" in str(problem)


@pytest.mark.parametrize("index", range(RECORDS))
def test_a_record_edited_with_its_checksum_redone_breaks_its_link(
    signed: tuple[bytes, str], index: int
) -> None:
    import hashlib

    bundle, key = signed

    def edit(doc: dict[str, Any]) -> None:
        row = doc["rows"][index]
        row["record"] = _flip(row["record"])
        row["checksum"] = hashlib.sha256(row["record"].encode()).hexdigest()

    report = verify_bundle(_with_segment(bundle, edit), public_key=key)
    link = next(p for p in report.problems if p.kind == "chain_link")
    assert link.sequence_no == index + 1
    assert link.expected == segment(files_of(bundle))["rows"][index]["chain_hash"]


def _drop(doc: dict[str, Any]) -> None:
    del doc["rows"][2]


def _swap(doc: dict[str, Any]) -> None:
    rows = doc["rows"]
    rows[1], rows[2] = rows[2], rows[1]


def _cut(doc: dict[str, Any]) -> None:
    doc["rows"].pop()


def _extend(doc: dict[str, Any]) -> None:
    extra = dict(doc["rows"][-1], sequence_no=RECORDS + 1)
    doc["rows"].append(extra)


def _head(doc: dict[str, Any]) -> None:
    doc["head"]["sequence_no"] -= 1


TAMPERINGS = {
    "dropped record": (_drop, ("sequence", 4), "sequence_no 3 to 3 missing"),
    "reordered records": (_swap, ("sequence", 3), "out of order"),
    "cut before the signed head": (_cut, ("segment_short", 4), "ends before the signed head"),
    "edited signed head": (_head, ("head_signature", 4), "does not verify"),
    "a row added after the signed head": (_extend, ("segment_short", None), "runs past"),
}


@pytest.mark.parametrize("name", sorted(TAMPERINGS))
def test_tampering_is_reported_precisely(signed: tuple[bytes, str], name: str) -> None:
    bundle, key = signed
    edit, where, words = TAMPERINGS[name]
    report = verify_bundle(_with_segment(bundle, edit), public_key=key)
    assert not report.ok
    assert where in _kinds(report), [str(p) for p in report.problems]
    assert any(words in str(p) for p in report.problems), [str(p) for p in report.problems]


def test_dropped_record_of_the_lineage_is_named(signed: tuple[bytes, str]) -> None:
    bundle, key = signed
    dropped = segment(files_of(bundle))["rows"][2]["event_id"]
    report = verify_bundle(_with_segment(bundle, _drop), public_key=key)
    assert any(p.kind == "lineage" and p.event_id == dropped for p in report.problems)


def test_an_edited_file_fails_its_manifest_hash(signed: tuple[bytes, str]) -> None:
    bundle, key = signed
    files = files_of(bundle)
    files["summary.md"] += b"\nAll good, nothing to see.\n"
    report = verify_bundle(rezip(files), public_key=key)
    assert [(p.kind, p.file) for p in report.problems] == [("file_hash", "summary.md")]


def test_a_file_added_to_the_bundle_is_reported(signed: tuple[bytes, str]) -> None:
    bundle, key = signed
    files = files_of(bundle)
    files["extra.json"] = b"{}"
    report = verify_bundle(rezip(files), public_key=key)
    assert [(p.kind, p.file) for p in report.problems] == [("unlisted_file", "extra.json")]


def test_a_substituted_key_is_a_wrong_key(signed: tuple[bytes, str]) -> None:
    """Someone re-signs the head and the manifest with a key of their own (and lists it in
    keys.json): with the server's key the bundle is refused as signed by another key; with
    the substitute it verifies, which is why the key must come from out of band."""
    bundle, key = signed
    forger = Ed25519PrivateKey.generate()
    raw = forger.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    files = files_of(bundle)
    doc = segment(files)
    doc["head"]["key_id"] = key_id(raw)
    doc["head"]["signature"] = base64.b64encode(forger.sign(head_payload(doc["head"]))).decode()
    files["segments/0.json"] = orjson.dumps(doc)
    files["keys.json"] = orjson.dumps({"keys": [{"public_key": base64.b64encode(raw).decode()}]})
    manifest = orjson.loads(files["manifest.json"])
    import hashlib

    manifest["files"] = {
        n: hashlib.sha256(d).hexdigest() for n, d in files.items() if n != "manifest.json"
    }
    manifest["key_id"] = key_id(raw)
    manifest["signature"] = base64.b64encode(forger.sign(manifest_payload(manifest))).decode()
    files["manifest.json"] = orjson.dumps(manifest)
    forged = rezip(files)
    with pytest.raises(WrongKey, match=f"signed by {key_id(raw)}") as caught:
        verify_bundle(forged, public_key=key)
    assert caught.value.given == [key_id(bytes.fromhex(key))]
    assert verify_bundle(forged, public_key=raw).ok


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("manifest.json", b"[]"),
        ("manifest.json", b"{not json"),
        ("segments/0.json", b'{"agent": "x", "rows": 5}'),
        ("lineage.json", b'["not", "an", "object"]'),
    ],
)
def test_a_file_not_in_its_format_is_a_corrupt_bundle(
    signed: tuple[bytes, str], name: str, content: bytes
) -> None:
    from agentledger.evidence import CorruptBundle

    bundle, key = signed
    files = files_of(bundle)
    files[name] = content
    with pytest.raises(CorruptBundle):
        verify_bundle(rezip(files), public_key=key)
