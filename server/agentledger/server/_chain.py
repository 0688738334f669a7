"""The per-agent hash chain (wire contract, "Hash chain") and its verification, which reports
each problem (``missing_or_reordered``, ``content_changed``, ``truncated_after_anchor``,
``anchor_mismatch``) where it is.

Design: ``docs/design/server-chain.md``.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import orjson

from agentledger.protocol.vocabulary import CLOSING_EVENTS, EDGE_CAUSE, EDGE_CLOSES
from agentledger.server._causes import record_edges

__all__ = ["ChainHasher", "ChainReport", "ChainRow", "ChainRowTuple", "verify_rows"]


class ChainHasher:
    """Computes checksums and chain links.

    Args:
        key: HMAC key (UTF-8 text); ``None`` for plain SHA-256 links.
    """

    def __init__(self, key: str | None = None) -> None:
        self._key = key.encode() if key else None

    @property
    def keyed(self) -> bool:
        """Whether links are HMAC-SHA256."""
        return self._key is not None

    @staticmethod
    def checksum(canonical: bytes) -> str:
        """SHA-256 hex of the canonical record."""
        return hashlib.sha256(canonical).hexdigest()

    def link(self, previous: str | None, canonical: bytes) -> str:
        """The chain hash following ``previous`` (hex or ``None`` for the first event)."""
        data = (previous or "").encode("ascii") + canonical
        if self._key is not None:
            return hmac.new(self._key, data, hashlib.sha256).hexdigest()
        return hashlib.sha256(data).hexdigest()

    def column_seal(self, chain_hash: str, received_at: Any, importance: Any) -> str | None:
        """The seal of the columns that sit next to the record and are shown with it
        (``received_at``, ``importance``): a link after the event's ``chain_hash``, keyed like
        the chain. Written with the event (``seal`` column); forget keeps both columns, so a
        tombstone keeps its seal. ``None`` when the values are of a type no write produces (a
        tampered row)."""
        if importance.__class__ is float:
            importance += 0.0  # -0.0 reads back as 0.0 from SQLite
        try:  # link(chain_hash, b"columns:" + ...) without its call: once per verified row
            data = chain_hash.encode() + b"columns:" + orjson.dumps([received_at, importance])
        except (TypeError, ValueError, AttributeError):
            return None
        if self._key is not None:
            return hmac.new(self._key, data, hashlib.sha256).hexdigest()
        return hashlib.sha256(data).hexdigest()

    def erasure_mark(
        self,
        chain_hash: str,
        kept: Sequence[Any],
    ) -> str | None:
        """The mark forget leaves on a tombstone (in its ``fingerprint`` column): a link after
        the event's ``chain_hash`` over what the tombstone still shows.

        Args:
            chain_hash: the erased event's chain hash.
            kept: ``(event_id, agent, sequence_no, timestamp, event, parent_id, session_id,
                supersedes)`` of the tombstone.

        A record set to NULL by hand carries no such mark, and a kept column edited after
        forget no longer matches it. Keyed like the chain (HMAC with a chain key). ``None``
        when the values cannot be what a forget marked (a tampered row of another SQL type).
        """
        try:
            return self.link(chain_hash, b"forget:" + orjson.dumps(list(kept)))
        except (TypeError, ValueError, AttributeError):
            return None

    def amendment_mark(self, chain_hash: str, record: bytes) -> str:
        """The mark forget leaves (in ``fingerprint``) on an event it rewrote without erasing
        it (a session id replaced by its pseudonym): a link after the event's ``chain_hash``
        over the new record. Keyed like the chain."""
        return self.link(chain_hash, b"amend:" + record)

    def pseudonym(self, session_id: str, nonce: bytes) -> str:
        """The name forget gives a session whose id held personal data: ``forgotten-`` and 24
        hex digits of an HMAC of the id, keyed by the chain key, or by ``nonce`` (random, used
        once and not stored) when the chain has no key, so nothing can map it back."""
        key = self._key or nonce
        digest = hmac.new(key, b"session:" + session_id.encode(), hashlib.sha256).hexdigest()
        return "forgotten-" + digest[:24]


class ChainRow(NamedTuple):
    """One stored row as verification sees it (a plain tuple in this order works too).

    ``record`` is the stored canonical JSON (``None`` for a forget tombstone); the other fields
    are the indexed columns that must agree with it. ``fingerprint`` matters only on a
    tombstone, where it holds the erasure mark (:meth:`ChainHasher.erasure_mark`); ``seal``
    covers ``received_at`` and ``importance`` (:meth:`ChainHasher.column_seal`).
    """

    sequence_no: int
    event_id: str
    agent: str
    timestamp: str
    event: str | None
    parent_id: str | None
    session_id: str | None
    record: bytes | None
    checksum: str | None
    chain_hash: str
    supersedes: str | None
    fingerprint: str | None
    received_at: str
    importance: float | None
    seal: str | None


@dataclass
class ChainReport:
    """The result of :func:`verify_rows` (wire shape via :meth:`as_dict`)."""

    verified: int = 0
    erased: int = 0
    amended: int = 0
    problems: list[dict[str, Any]] = field(default_factory=list)
    head_seq: int = 0
    head_hash: str | None = None
    #: event id of the last row read (``None`` before any)
    head_event: str | None = None

    @property
    def intact(self) -> bool:
        """No problem found."""
        return not self.problems

    def as_dict(self, agent: str) -> dict[str, Any]:
        """``{intact, summary, problems, chain_head, verified, erased}``."""
        if self.intact:
            summary = f"chain intact: {self.verified} events verified for agent {agent!r}"
        else:
            kinds: dict[str, int] = {}
            for problem in self.problems:
                kinds[problem["kind"]] = kinds.get(problem["kind"], 0) + 1
            parts = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
            summary = f"chain BROKEN for agent {agent!r}: {parts} ({self.verified} events read)"
        if self.erased:
            summary += f"; {self.erased} erased by forget"
        if self.amended:
            summary += f"; {self.amended} with a session id replaced by forget"
        return {
            "intact": self.intact,
            "summary": summary,
            "problems": self.problems,
            "chain_head": {"sequence_no": self.head_seq, "chain_hash": self.head_hash},
            "verified": self.verified,
            "erased": self.erased,
            "amended": self.amended,
        }


_SEAL_BROKEN = (
    "received_at or importance was edited: the column seal written with the event no longer matches"
)


#: The indexed columns compared with the record's fields, by their index in a chain row.
_INDEXED = (
    (1, "event_id"),
    (2, "agent"),
    (3, "timestamp"),
    (4, "event"),
    (5, "parent_id"),
    (6, "session_id"),
    (10, "supersedes"),
)


def _mismatch(rec: dict[str, Any], record: bytes, checksum: Any, row: Sequence[Any]) -> str:
    """The detail of a row whose record and columns disagree (the failure path only)."""
    if checksum != hashlib.sha256(record).hexdigest():
        return "record does not match its checksum"
    names = [name for index, name in _INDEXED if rec.get(name) != row[index]]
    return f"the {', '.join(names)} column differs from the record (edited by hand)"


def _problem(kind: str, row: Sequence[Any] | None, seq: int, detail: str) -> dict[str, Any]:
    return {
        "kind": kind,
        "event_id": row[1] if row else None,
        "sequence_no": seq,
        "detail": detail,
    }


#: A stored row as a plain tuple, in :class:`ChainRow` field order.
ChainRowTuple = tuple[
    int,
    str,
    str,
    str,
    str | None,
    str | None,
    str | None,
    bytes | None,
    str | None,
    str,
    str | None,
    str | None,
    str,
    float | None,
    str | None,
]


class _EdgeCursor:
    """Stored causal edges grouped by the sequence number of their effect, read in step with
    the chain rows (both ascending)."""

    def __init__(self, rows: Iterable[tuple[int, str, str, str]]) -> None:
        self._rows = iter(rows)
        self._next: tuple[int, str, str, str] | None = next(self._rows, None)

    def take(self, seq: int) -> list[tuple[str, str, str]]:
        """The edges of the event at ``seq`` (edges of lower, unseen numbers are passed)."""
        out: list[tuple[str, str, str]] = []
        row = self._next
        while row is not None and row[0] <= seq:
            if row[0] == seq:
                out.append((row[1], row[2], row[3]))
            row = next(self._rows, None)
        self._next = row
        return out


def _tombstone_edges_match(
    parent_id: str | None, agent: str, stored: list[tuple[str, str, str]]
) -> bool:
    """An erased event's record is gone, and with it its ``caused_by``: what can still be
    checked is that its parent edge names the kept ``parent_id`` and that every edge is its
    agent's."""
    if any(edge_agent != agent for _, _, edge_agent in stored):
        return False
    if parent_id:
        return any(cause == parent_id for cause, _, _ in stored)
    return True


def _edges_match(rec: dict[str, Any], agent: str, stored: list[tuple[str, str, str]]) -> bool:
    caused_by = rec.get("caused_by")
    if caused_by is None:  # the common record: no causes beyond its parent (the same rule)
        parent = rec.get("parent_id")
        if not parent:
            return not stored
        kind = EDGE_CLOSES if rec.get("event") in CLOSING_EVENTS else EDGE_CAUSE
        return len(stored) == 1 and stored[0] == (parent, kind, agent)
    if not (isinstance(caused_by, list) and all(isinstance(c, dict) for c in caused_by)):
        return False
    parent = rec.get("parent_id")
    expected = record_edges(str(rec.get("event")), parent if parent else None, caused_by)
    return sorted((cause, kind, agent) for cause, kind in expected) == sorted(stored)


def _not_amended(
    hasher: ChainHasher, rep: ChainReport, chain: str, record: bytes, mark: str | None
) -> bool:
    """For a record that does not follow its link: ``False`` (and counted as amended) when it
    carries forget's amendment mark, ``True`` otherwise."""
    if mark is not None and mark == hasher.amendment_mark(chain, record):
        rep.amended += 1
        return False
    return True


def verify_rows(
    rows: Iterable[ChainRowTuple],
    hasher: ChainHasher,
    *,
    start_seq: int = 0,
    previous_hash: str | None = None,
    report: ChainReport | None = None,
    edges: Iterable[tuple[int, str, str, str]] | None = None,
) -> ChainReport:
    """Verify consecutive rows of one agent, ordered by stored ``sequence_no``.

    Args:
        rows: the rows after ``start_seq``, ascending (:class:`ChainRow` or plain tuples).
        hasher: the server's :class:`ChainHasher` (same key as at write time).
        start_seq: sequence number of the last row already trusted (0 = from the start).
        previous_hash: chain hash of that row (``None`` at the start).
        report: a report to continue (anchor checks add to it first).
        edges: the stored causal edges of the same rows as ``(sequence_no, cause_id, kind,
            agent)``, ascending; each record's edges must be exactly those it defines
            (:func:`agentledger.server._causes.record_edges`). ``None`` skips the check.

    Returns:
        The report, with ``head_seq``/``head_hash`` set to the last row read.
    """
    rep = report or ChainReport()
    expected = start_seq + 1
    prev = previous_hash
    link = hasher.link
    column_seal = hasher.column_seal
    sha256 = hashlib.sha256
    loads = orjson.loads
    problems = rep.problems
    # Links of rows found out of place, by the sequence number their record carries: the row
    # that follows a moved row links to it, so one swap is reported once, not as a cascade.
    # ``relink`` is the recomputed link of a row whose stored link did not follow: when only
    # its chain_hash was edited, the next row still follows the recomputed one (one report).
    displaced: dict[int, str] = {}
    verified = 0
    cursor = _EdgeCursor(edges) if edges is not None else None
    relink: str | None = None
    for row in rows:
        verified += 1
        relinked, relink = relink, None
        (
            seq,
            event_id,
            agent,
            timestamp,
            event,
            parent_id,
            session_id,
            record,
            checksum,
            chain,
            supersedes,
            mark,
            received_at,
            importance,
            seal,
        ) = row
        if record is None:  # forget tombstone: keeps its link and a mark, content erased
            if seq != expected:
                problems.append(
                    _problem("missing_or_reordered", row, seq, f"expected sequence_no {expected}")
                )
            elif mark is None or mark != hasher.erasure_mark(
                chain,
                (event_id, agent, seq, timestamp, event, parent_id, session_id, supersedes),
            ):
                problems.append(
                    _problem(
                        "content_changed",
                        row,
                        seq,
                        "the record is gone but the row carries no valid forget mark: erased "
                        "by hand, or a column of an erased event was edited",
                    )
                )
                prev = chain
                expected = seq + 1
                continue
            elif seal is None or seal != column_seal(chain, received_at, importance):
                problems.append(_problem("content_changed", row, seq, _SEAL_BROKEN))
            elif cursor is not None and not _tombstone_edges_match(
                parent_id, agent, cursor.take(seq)
            ):
                problems.append(
                    _problem(
                        "content_changed",
                        row,
                        seq,
                        "the stored causal edges of an erased event differ from its parent_id",
                    )
                )
            rep.erased += 1
            prev = chain
            expected = seq + 1
            continue
        if type(record) is not bytes:
            # SQLite is dynamically typed: a tampered row may hold TEXT, a number or a blob
            # view instead of the stored bytes. Compare its bytes; anything else is changed.
            if isinstance(record, str):
                record = record.encode("utf-8", "surrogatepass")
            elif isinstance(record, bytearray | memoryview):
                record = bytes(record)
            else:
                problems.append(_problem("content_changed", row, seq, "record is not JSON text"))
                prev = chain
                expected = seq + 1
                continue
        try:
            rec = loads(record)
        except orjson.JSONDecodeError:
            rec = None
        if type(rec) is not dict:
            problems.append(_problem("content_changed", row, seq, "record is not a JSON object"))
        elif seq != expected or rec.get("sequence_no") != seq:
            stored = rec.get("sequence_no")
            if isinstance(stored, int) and stored != seq and len(displaced) < 10_000:
                displaced[stored] = chain
            problems.append(
                _problem(
                    "missing_or_reordered",
                    row,
                    seq,
                    f"expected sequence_no {expected}; the record says {stored}",
                )
            )
        elif (
            checksum != sha256(record).hexdigest()
            or rec.get("event_id") != event_id
            or rec.get("agent") != agent
            or rec.get("timestamp") != timestamp
            or rec.get("event") != event
            or rec.get("parent_id") != parent_id
            or rec.get("session_id") != session_id
            or rec.get("supersedes") != supersedes
        ):
            problems.append(
                _problem("content_changed", row, seq, _mismatch(rec, record, checksum, row))
            )
        elif (
            (computed := link(displaced.pop(seq - 1, prev) if displaced else prev, record)) != chain
            and (relinked is None or link(relinked, record) != chain)
            and _not_amended(hasher, rep, chain, record, mark)
        ):
            problems.append(
                _problem("content_changed", row, seq, "chain link does not follow its predecessor")
            )
            # if only this row's stored link was edited, the next row follows the true one
            relink = computed
        elif seal is None or seal != column_seal(chain, received_at, importance):
            problems.append(_problem("content_changed", row, seq, _SEAL_BROKEN))
        elif cursor is not None and not _edges_match(rec, agent, cursor.take(seq)):
            problems.append(
                _problem(
                    "content_changed",
                    row,
                    seq,
                    "the stored causal edges differ from the causes the record names",
                )
            )
        prev = chain
        expected = seq + 1
    rep.verified += verified
    if verified:
        rep.head_seq = expected - 1
        rep.head_hash = prev
        rep.head_event = event_id
    elif rep.head_hash is None:
        rep.head_seq = start_seq
        rep.head_hash = previous_hash
    return rep
