"""One agent's chain segment in a bundle: every record's checksum, every link from the first
row up to the signed head, erasure marks and column seals, recomputed as the server computes
them (``docs/design/server-chain.md``) with nothing but ``hashlib``.

With an HMAC-keyed chain (``hmac_links`` in the signed head) links, marks and seals cannot be
recomputed without the key: only checksums, order and the head's position are checked, and the
report says so.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import orjson

from agentledger.evidence._report import Report

__all__ = ["verify_segment"]


def _link(previous: str | None, data: bytes) -> str:
    return hashlib.sha256((previous or "").encode("ascii") + data).hexdigest()


def _erasure_mark(chain_hash: str, kept: Sequence[Any]) -> str:
    return _link(chain_hash, b"forget:" + orjson.dumps(list(kept)))


def _seal(chain_hash: str, received_at: Any, importance: Any) -> str:
    if importance.__class__ is float:
        importance += 0.0
    return _link(chain_hash, b"columns:" + orjson.dumps([received_at, importance]))


_COLUMNS = ("event_id", "timestamp", "event", "parent_id", "session_id", "supersedes")


def _check_live(
    report: Report, row: dict[str, Any], agent: str, prev: str | None, hmac: bool, name: str
) -> None:
    seq = row["sequence_no"]
    where = {"file": name, "sequence_no": seq, "event_id": row.get("event_id")}
    record = str(row["record"]).encode("utf-8", "surrogatepass")
    got = hashlib.sha256(record).hexdigest()
    if got != row.get("checksum"):
        report.add(
            "record_checksum",
            "the record's SHA-256 is not its checksum",
            expected=row.get("checksum"),
            got=got,
            **where,
        )
        return
    try:
        rec = orjson.loads(record)
    except orjson.JSONDecodeError:
        rec = None
    if not isinstance(rec, dict):
        report.add("record_columns", "the record is not a JSON object", **where)
        return
    for name_ in ("sequence_no", "agent", *_COLUMNS):
        want = {"sequence_no": seq, "agent": agent}.get(name_, row.get(name_))
        if rec.get(name_) != want:
            report.add(
                "record_columns",
                f"the row's {name_} differs from the record's",
                expected=rec.get(name_),
                got=want,
                **where,
            )
            return
    if hmac:
        return
    computed = _link(prev, record)
    chain = row.get("chain_hash")
    if computed != chain:
        mark = row.get("mark")
        if mark is not None and mark == _link(str(chain), b"amend:" + record):
            report.amended += 1  # forget replaced the session id: the mark stands for the link
        else:
            report.add(
                "chain_link",
                "the chain link does not follow from the previous link and this record",
                expected=chain,
                got=computed,
                **where,
            )
            return
    if row.get("seal") != _seal(str(chain), row.get("received_at"), row.get("importance")):
        report.add("column_seal", "received_at or importance differs from its seal", **where)


def _check_tombstone(
    report: Report, row: dict[str, Any], agent: str, hmac: bool, name: str
) -> None:
    report.erased += 1
    if hmac:
        return
    seq = row["sequence_no"]
    kept = (row.get("event_id"), agent, seq, *(row.get(c) for c in _COLUMNS[1:]))
    mark = _erasure_mark(str(row.get("chain_hash")), kept)
    if row.get("mark") != mark:
        report.add(
            "erasure_mark",
            "the erased event's mark does not cover its chain link and kept columns",
            file=name,
            sequence_no=seq,
            event_id=row.get("event_id"),
            expected=row.get("mark"),
            got=mark,
        )


def verify_segment(
    report: Report, segment: dict[str, Any], name: str, anchors: dict[int, str]
) -> dict[int, dict[str, Any]]:
    """Check ``segment`` (its signed head already checked by the caller) and add what fails
    to ``report``; ``anchors`` maps sequence numbers of checked signed heads to their chain
    hashes. Returns the rows by sequence number."""
    agent = str(segment["agent"])
    head = segment["head"]
    hmac = bool(head.get("hmac_links"))
    rows: list[dict[str, Any]] = segment["rows"]
    expected = int(segment["first_seq"])
    prev: str | None = segment.get("previous_hash")
    by_seq: dict[int, dict[str, Any]] = {}
    for row in rows:
        seq = row.get("sequence_no")
        if not isinstance(seq, int):
            report.add("format", "a row without an integer sequence_no", file=name)
            continue
        report.records += 1
        if seq != expected:
            detail = (
                f"sequence_no {expected} to {seq - 1} missing"
                if seq > expected
                else "rows out of order or repeated"
            )
            report.add("sequence", detail, file=name, sequence_no=seq, expected=expected, got=seq)
            expected = max(expected, seq + 1)
            prev = row.get("chain_hash")
            by_seq.setdefault(seq, row)
            continue
        by_seq[seq] = row
        if row.get("record") is None:
            _check_tombstone(report, row, agent, hmac, name)
        else:
            _check_live(report, row, agent, prev, hmac, name)
        prev = row.get("chain_hash")
        expected = seq + 1
    last = expected - 1
    if last < head["sequence_no"]:
        report.add(
            "segment_short",
            "the segment ends before the signed head: the rows up to it are gone",
            file=name,
            sequence_no=last,
            expected=head["sequence_no"],
            got=last,
        )
    elif last > head["sequence_no"]:
        report.add(
            "segment_short",
            "the segment runs past its signed head (rows no signature covers)",
            file=name,
            expected=head["sequence_no"],
            got=last,
        )
    for seq, chain in sorted(anchors.items()):
        at = by_seq.get(seq)
        if at is None or at.get("chain_hash") != chain:
            report.add(
                "head_mismatch" if seq == head["sequence_no"] else "anchor_mismatch",
                "the chain link at a signed head's sequence_no is not the signed one",
                file=name,
                sequence_no=seq,
                expected=chain,
                got=at.get("chain_hash") if at else None,
            )
    if hmac:
        report.links_checked = False
        report.notes.append(
            f"agent {agent!r}: HMAC-keyed chain; links, erasure marks and seals were not "
            "recomputed (they need the server's chain key). Checked: each record against its "
            "checksum, the order of sequence numbers, the signed head, and the manifest "
            "signature over every file."
        )
    else:
        anchored = False  # walking down from the head: an erased event's link is not recomputable
        for seq in sorted(by_seq, reverse=True):
            anchored = anchored or seq in anchors
            if not anchored:
                report.unanchored.append((agent, seq))
            if by_seq[seq].get("record") is None:
                anchored = False
    return by_seq
