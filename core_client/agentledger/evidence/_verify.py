"""``verify_bundle``: open the zip, check the manifest's signature and every file's hash,
each chain segment against its signed head, and that the event and its lineage are in the
segments. Everything that fails goes into the :class:`Report`; what makes the bundle
unverifiable as a whole raises a :class:`BundleError`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import zipfile
from pathlib import Path
from typing import Any

import orjson
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from agentledger.evidence._errors import CorruptBundle, MissingFile, WrongAgent, WrongKey
from agentledger.evidence._keys import PublicKeyInput, load_public_keys
from agentledger.evidence._report import Report
from agentledger.evidence._segment import verify_segment
from agentledger.protocol.evidence_bundle import (
    BUNDLE_FORMAT,
    DECISION_FILE,
    LINEAGE_FILE,
    MANIFEST_FILE,
    REQUIRED_FILES,
    SEGMENT_PREFIX,
)
from agentledger.protocol.signed_heads import head_payload, manifest_payload

__all__ = ["verify_bundle"]


def _read_zip(source: str | Path | bytes) -> dict[str, bytes]:
    try:
        raw = source if isinstance(source, bytes) else Path(source).read_bytes()
    except OSError as error:
        raise CorruptBundle(f"cannot read the bundle: {error}") from None
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as archive:
            return {info.filename: archive.read(info) for info in archive.infolist()}
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError) as error:
        raise CorruptBundle(f"not a readable zip (corrupt or truncated): {error}") from None


def _json(files: dict[str, bytes], name: str) -> Any:
    if name not in files:
        raise MissingFile(name)
    try:
        return orjson.loads(files[name])
    except orjson.JSONDecodeError as error:
        raise CorruptBundle(f"{name} is not JSON: {error}") from None


def _signed(
    keys: dict[str, Ed25519PublicKey], what: str, key: Any, signature: Any, payload: bytes
) -> bool:
    """Whether ``signature`` over ``payload`` verifies with the given key ``key``.

    Raises:
        WrongKey: ``key`` is not one of the given keys.
    """
    public = keys.get(str(key))
    if public is None:
        raise WrongKey(what, str(key), sorted(keys))
    try:
        public.verify(base64.b64decode(str(signature), validate=True), payload)
    except (InvalidSignature, binascii.Error, ValueError):
        return False
    return True


def _check_manifest(report: Report, files: dict[str, bytes], manifest: Any, keys: Any) -> None:
    if not isinstance(manifest, dict) or manifest.get("format") != BUNDLE_FORMAT:
        got = manifest.get("format") if isinstance(manifest, dict) else None
        raise CorruptBundle(f"{MANIFEST_FILE}: format {got!r}, this verifier reads {BUNDLE_FORMAT}")
    if not _signed(
        keys,
        MANIFEST_FILE,
        manifest.get("key_id"),
        manifest.get("signature"),
        manifest_payload(manifest),
    ):
        report.add(
            "manifest_signature", "the manifest's signature does not verify", file=MANIFEST_FILE
        )
    listed: dict[str, str] = manifest.get("files") or {}
    for name in REQUIRED_FILES:
        if name != MANIFEST_FILE and name not in listed:
            raise MissingFile(name, "the manifest does not list it")
    for name, digest in sorted(listed.items()):
        if name not in files:
            raise MissingFile(name, "listed in the manifest")
        got = hashlib.sha256(files[name]).hexdigest()
        if got != digest:
            report.add(
                "file_hash",
                "the file's SHA-256 is not the manifest's",
                file=name,
                expected=digest,
                got=got,
            )
    for name in sorted(set(files) - set(listed) - {MANIFEST_FILE}):
        report.add("unlisted_file", "a file the manifest does not list", file=name)


def _check_heads(
    report: Report, segment: dict[str, Any], name: str, keys: dict[str, Ed25519PublicKey]
) -> dict[int, str]:
    """Verify the segment's signed head (and the earlier heads it carries); returns the
    chain hash of each head whose signature verified, by sequence number."""
    head = segment["head"]
    if head.get("agent") != segment.get("agent"):
        report.add(
            "head_signature",
            "the signed head is another agent's",
            file=name,
            expected=segment.get("agent"),
            got=head.get("agent"),
        )
    checked: dict[int, str] = {}
    if _signed(
        keys,
        f"the signed head of {name}",
        head.get("key_id"),
        head.get("signature"),
        head_payload(head),
    ):
        checked[int(head["sequence_no"])] = str(head["chain_hash"])
        report.heads.append(
            {k: head[k] for k in ("agent", "sequence_no", "chain_hash", "key_id", "signed_at")}
        )
    else:
        report.add(
            "head_signature",
            "the signed head's signature does not verify",
            file=name,
            sequence_no=head.get("sequence_no"),
        )
    for anchor in segment.get("anchors") or []:
        if anchor.get("key_id") not in keys:
            report.notes.append(
                f"{name}: an earlier signed head at #{anchor.get('sequence_no')} is signed by "
                f"{anchor.get('key_id')}, a key not given; it anchors nothing here"
            )
            continue
        if anchor.get("agent") == segment.get("agent") and _signed(
            keys, name, anchor["key_id"], anchor.get("signature"), head_payload(anchor)
        ):
            checked.setdefault(int(anchor["sequence_no"]), str(anchor["chain_hash"]))
        else:
            report.add(
                "head_signature",
                "an earlier signed head does not verify",
                file=name,
                sequence_no=anchor.get("sequence_no"),
            )
    return checked


def _named_causes(row: dict[str, Any]) -> set[str] | None:
    """The causes the row's record names; ``None`` for an erased event (only its parent)."""
    if row.get("record") is None:
        return None
    try:
        rec = orjson.loads(str(row["record"]))
    except orjson.JSONDecodeError:
        return set()
    causes = {str(c.get("event_id")) for c in rec.get("caused_by") or () if isinstance(c, dict)}
    if rec.get("parent_id"):
        causes.add(str(rec["parent_id"]))
    return causes


def _check_lineage(
    report: Report, lineage: Any, rows: dict[tuple[str, int], dict[str, Any]]
) -> None:
    by_id = {str(r.get("event_id")): r for r in rows.values()}
    for event in lineage.get("events") or []:
        row = rows.get((str(event.get("agent")), event.get("sequence_no")))
        if row is None or row.get("event_id") != event.get("event_id"):
            report.add(
                "lineage",
                "an event of the lineage is not in its agent's chain segment",
                file=LINEAGE_FILE,
                sequence_no=event.get("sequence_no"),
                event_id=event.get("event_id"),
            )
    if lineage.get("event_id") not in by_id:
        report.add(
            "lineage",
            "the bundle's event is not in the chain segment",
            file=LINEAGE_FILE,
            event_id=lineage.get("event_id"),
        )
    for edge in lineage.get("edges") or []:
        effect = by_id.get(str(edge.get("effect")))
        if effect is None:
            report.add(
                "edge",
                "an edge's effect is not in the segment",
                file=LINEAGE_FILE,
                event_id=edge.get("effect"),
            )
            continue
        named = _named_causes(effect)
        if named is None:
            if edge.get("cause") != effect.get("parent_id"):
                report.notes.append(
                    f"edge {edge.get('effect')} <- {edge.get('cause')}: the effect is erased, "
                    "only its parent edge can be checked"
                )
        elif edge.get("cause") not in named:
            report.add(
                "edge",
                "the effect's record does not name this cause",
                file=LINEAGE_FILE,
                event_id=edge.get("effect"),
                expected=sorted(named),
                got=edge.get("cause"),
            )


def verify_bundle(
    source: str | Path | bytes, *, public_key: PublicKeyInput, agent: str | None = None
) -> Report:
    """Verify an evidence bundle offline with only the server's public key(s).

    Args:
        source: the zip's path or bytes.
        public_key: the key(s) to trust (raw, hex, base64, PEM, or a file; several for a
            bundle whose heads span a key rotation).
        agent: the agent the bundle must be about.

    Raises:
        CorruptBundle: not a zip, truncated, or a file that is not what it should be.
        MissingFile: a required or listed file is not in the zip.
        WrongKey: a signature names a key other than the given one(s).
        WrongAgent: ``agent`` given and the bundle is another agent's.
    """
    keys = load_public_keys(public_key)
    files = _read_zip(source)
    try:
        return _verify_files(files, keys, agent)
    except (KeyError, TypeError, AttributeError, IndexError) as error:
        raise CorruptBundle(f"a file of the bundle is not in its format ({error!r})") from None


def _verify_files(
    files: dict[str, bytes], keys: dict[str, Ed25519PublicKey], agent: str | None
) -> Report:
    manifest = _json(files, MANIFEST_FILE)
    if not isinstance(manifest, dict):
        raise CorruptBundle(f"{MANIFEST_FILE} is not a JSON object")
    report = Report(event_id=manifest.get("event_id"), agent=manifest.get("agent"))
    if agent is not None and manifest.get("agent") != agent:
        raise WrongAgent(agent, str(manifest.get("agent")))
    _check_manifest(report, files, manifest, keys)
    lineage = _json(files, LINEAGE_FILE)
    rows: dict[tuple[str, int], dict[str, Any]] = {}
    names = sorted(n for n in files if n.startswith(SEGMENT_PREFIX))
    if not names:
        raise MissingFile(f"{SEGMENT_PREFIX}0.json")
    for name in names:
        segment = _json(files, name)
        try:
            anchors = _check_heads(report, segment, name, keys)
            by_seq = verify_segment(report, segment, name, anchors)
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            if isinstance(error, WrongKey):
                raise
            raise CorruptBundle(f"{name}: not a chain segment ({error!r})") from None
        rows.update({(str(segment["agent"]), seq): row for seq, row in by_seq.items()})
    if str(manifest.get("agent")) not in {a for a, _ in rows}:
        report.add("lineage", "no chain segment of the bundle's agent", file=MANIFEST_FILE)
    _check_lineage(report, lineage, rows)
    if DECISION_FILE in files:
        _check_decision(report, _json(files, DECISION_FILE), manifest, rows)
    report.unanchored.sort()
    return report


def _decision_ids(decision: dict[str, Any]) -> list[str]:
    """The records the decision-time view cites: the event, its model call and that call's
    end, what the call read, and each approval's interrupt and resume."""
    ids = [decision.get("event_id")]
    call = decision.get("model_call") or {}
    ids += [call.get("event_id"), (call.get("output") or {}).get("event_id")]
    ids += [read.get("event_id") for read in decision.get("reads") or [] if read.get("event")]
    for approval in decision.get("approvals") or []:
        ids += [approval.get("resume_id")]
        ids += [approval.get("interrupt_id")] if approval.get("interrupt") else []
    return [str(i) for i in ids if i]


def _check_decision(
    report: Report, decision: Any, manifest: dict[str, Any], rows: dict[tuple[str, int], Any]
) -> None:
    """``decision.json`` is derived from the records: it must be about the bundle's event and
    cite only records the segments hold (its ``state`` summarises the agent's state at the
    time and is covered by the manifest signature only)."""
    if not isinstance(decision, dict):
        raise CorruptBundle(f"{DECISION_FILE} is not a JSON object")
    if decision.get("event_id") != manifest.get("event_id"):
        report.add("decision", "the decision view is about another event", file=DECISION_FILE,
                   event_id=decision.get("event_id"))  # fmt: skip
    held = {str(r.get("event_id")) for r in rows.values()}
    for event_id in dict.fromkeys(_decision_ids(decision)):
        if event_id not in held:
            report.add(
                "decision",
                "the decision view cites a record that is not in the chain segments",
                file=DECISION_FILE,
                event_id=event_id,
            )
