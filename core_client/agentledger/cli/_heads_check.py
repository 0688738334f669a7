"""``agentledger signing check``: a ledger against its published signed heads.

1. The keys the user trusts: ``--public-key`` (a raw Ed25519 key as 64 hex digits or base64,
   or a file holding one, or the JSON of ``agentledger signing keys --json`` /
   ``GET /v1/signing-keys``), or ``--fingerprint`` (the server's keys whose SHA-256
   fingerprint is given; the server's own list is never trusted on its word).
2. Every head file of the directory is read strictly (a corrupt file is a problem naming it)
   and its signature checked against a trusted key of its ``key_id``.
3. For every verified head, the chain anchor check of ``GET /v1/events/chain`` (``after_seq``
   + ``anchor``): ``anchor_mismatch`` when the ledger's link at the head's sequence number
   differs, ``truncated_after_anchor`` when that event is gone; and one plain verification of
   the whole chain.

Design: ``docs/design/evidence.md``; user docs: ``docs/pages/evidence.md``.
"""

from __future__ import annotations

import base64
import binascii
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from agentledger.client import Ledger, NotFoundError
from agentledger.protocol.head_files import HeadFileError, head_file_paths, load_head_file
from agentledger.protocol.signed_heads import head_payload, key_fingerprint, key_id

__all__ = ["CheckReport", "KeyInputError", "check_published", "trusted_keys"]


class KeyInputError(ValueError):
    """A ``--public-key`` or ``--fingerprint`` that names no usable key."""


@dataclass
class CheckReport:
    """What the check found: ``problems`` (each with ``kind``, ``agent``, ``sequence_no``,
    ``detail``, and ``path`` for a file), and per agent the heads checked."""

    problems: list[dict[str, Any]] = field(default_factory=list)
    agents: dict[str, dict[str, Any]] = field(default_factory=dict)
    files: int = 0

    @property
    def ok(self) -> bool:
        """Every file verified and the ledger matches every head."""
        return not self.problems

    def add(self, kind: str, detail: str, **where: Any) -> None:
        self.problems.append({"kind": kind, **where, "detail": detail})

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "files": self.files,
            "agents": self.agents,
            "problems": self.problems,
        }


def _raw_key(text: str) -> bytes | None:
    text = text.strip()
    if len(text) == 64:
        try:
            return bytes.fromhex(text)
        except ValueError:
            pass
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw if len(raw) == 32 else None


def _keys_from(value: str) -> list[bytes]:
    path = Path(value)
    if not path.is_file():
        raw = _raw_key(value)
        if raw is None:
            raise KeyInputError(
                f"--public-key {value!r}: neither a file nor a raw Ed25519 key "
                "(64 hex digits or base64 of 32 bytes)"
            )
        return [raw]
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        doc = orjson.loads(text)
    except orjson.JSONDecodeError:
        doc = None
    if isinstance(doc, dict | list):
        listed = doc.get("keys") if isinstance(doc, dict) else doc
        found = [
            _raw_key(str(item.get("public_key", "")))
            for item in listed or []
            if isinstance(item, dict)
        ]
        keys = [k for k in found if k is not None]
        if keys:
            return keys
    raw = _raw_key(text)
    if raw is None:
        raise KeyInputError(f"--public-key {path}: holds no Ed25519 public key")
    return [raw]


def trusted_keys(
    public_keys: list[str], fingerprints: list[str], ledger: Ledger | None
) -> dict[str, bytes]:
    """``key_id -> raw public key`` of every key the user trusts.

    Raises:
        KeyInputError: a key that cannot be read, or a fingerprint the server has no key of.
    """
    trusted: dict[str, bytes] = {}
    for value in public_keys:
        for raw in _keys_from(value):
            trusted[key_id(raw)] = raw
    if fingerprints:
        assert ledger is not None
        served: dict[str, bytes] = {}
        for key in ledger.signing_keys():
            listed = _raw_key(key.public_key)
            if listed is not None:
                served[key_fingerprint(listed)] = listed
        for given in fingerprints:
            pinned = served.get(given.strip().lower().removeprefix("sha256:"))
            if pinned is None:
                raise KeyInputError(
                    f"--fingerprint {given}: the server has no signing key with this fingerprint"
                )
            trusted[key_id(pinned)] = pinned
    return trusted


def _signature_ok(head: dict[str, Any], raw: bytes) -> bool:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        signature = base64.b64decode(head["signature"], validate=True)
        Ed25519PublicKey.from_public_bytes(raw).verify(signature, head_payload(head))
    except (InvalidSignature, binascii.Error, ValueError):
        return False
    return True


def _verified_heads(
    directory: Path, agent: str | None, trusted: dict[str, bytes], report: CheckReport
) -> dict[str, list[dict[str, Any]]]:
    by_agent: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for path in head_file_paths(directory, agent):
        report.files += 1
        try:
            head = load_head_file(path)
        except HeadFileError as error:
            report.add("corrupt_head_file", str(error), path=str(path))
            continue
        if agent is not None and head["agent"] != agent:
            continue
        where = {"agent": head["agent"], "sequence_no": head["sequence_no"], "path": str(path)}
        raw = trusted.get(head["key_id"])
        if raw is None:
            report.add(
                "untrusted_key",
                f"signed by key {head['key_id']}, which is not one of the trusted keys "
                f"({', '.join(sorted(trusted)) or 'none'}): the head is refused",
                **where,
            )
        elif not _signature_ok(head, raw):
            report.add(
                "bad_signature",
                f"the signature does not verify with key {head['key_id']}: the head file was "
                "changed after signing, or was not signed by that key",
                **where,
            )
        else:
            by_agent[head["agent"]].append(head)
    return by_agent


def _ledger_hash(ledger: Ledger, event_id: str | None) -> str:
    if event_id is None:
        return "?"
    try:
        return ledger.get_event(event_id).chain_hash or "?"
    except NotFoundError:
        return "?"


def _check_agent(
    ledger: Ledger, agent: str, heads: list[dict[str, Any]], report: CheckReport
) -> None:
    unique = sorted({(h["sequence_no"], h["chain_hash"]): h for h in heads}.values(), key=_seq)
    matched: int | None = None
    failed = 0
    current: int | None = None
    for head in unique:
        seq = head["sequence_no"]
        answer = ledger.verify_chain(agent=agent, anchor=head["chain_hash"], after_seq=seq)
        if answer.chain_head is not None:
            current = answer.chain_head.sequence_no
        kinds = {p.kind: p for p in answer.problems}
        signed = f"published head #{seq} (signed {head['signed_at']} by {head['key_id']})"
        since = f"; the last published head that matches is #{matched}" if matched else ""
        if "anchor_mismatch" in kinds:
            failed += 1
            problem = kinds["anchor_mismatch"]
            report.add(
                "anchor_mismatch",
                f"{signed} has chain_hash {head['chain_hash']}, the ledger's event #{seq} "
                f"({problem.event_id}) has {_ledger_hash(ledger, problem.event_id)}: "
                f"an event at or before #{seq} was changed{since}",
                agent=agent,
                sequence_no=seq,
                event_id=problem.event_id,
            )
        elif "truncated_after_anchor" in kinds:
            failed += 1
            now = f"#{current}" if current else "no events"
            report.add(
                "truncated_after_anchor",
                f"{signed}: the ledger has no event #{seq} any more (its chain now ends at "
                f"{now}): events were deleted{since}",
                agent=agent,
                sequence_no=seq,
            )
        else:
            matched = seq
    plain = ledger.verify_chain(agent=agent)
    for problem in plain.problems:
        report.add(
            problem.kind,
            problem.detail or problem.kind,
            agent=agent,
            sequence_no=problem.sequence_no,
            event_id=problem.event_id,
        )
    report.agents[agent] = {
        "heads": len(heads),
        "checked": len(unique),
        "mismatched": failed,
        "newest_published": unique[-1]["sequence_no"] if unique else None,
        "ledger_head": plain.chain_head.sequence_no if plain.chain_head else None,
        "intact": plain.intact,
    }


def _seq(head: dict[str, Any]) -> int:
    return int(head["sequence_no"])


def check_published(
    ledger: Ledger, directory: Path, trusted: dict[str, bytes], *, agent: str | None = None
) -> CheckReport:
    """Check the ledger behind ``ledger`` against every head published in ``directory``."""
    report = CheckReport()
    for name, heads in sorted(_verified_heads(directory, agent, trusted, report).items()):
        _check_agent(ledger, name, heads, report)
    return report
