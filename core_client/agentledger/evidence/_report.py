"""The verifier's answer: every check that failed, where, expected against got."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Problem", "Report"]


@dataclass(frozen=True)
class Problem:
    """One failed check.

    ``kind`` is one of ``file_hash``, ``unlisted_file``, ``manifest_signature``,
    ``head_signature``, ``record_checksum``, ``record_columns``, ``chain_link``,
    ``erasure_mark``, ``column_seal``, ``sequence``, ``segment_short``, ``head_mismatch``,
    ``anchor_mismatch``, ``lineage``, ``edge``, ``decision``, ``format``.
    """

    kind: str
    detail: str
    file: str | None = None
    sequence_no: int | None = None
    event_id: str | None = None
    expected: Any = None
    got: Any = None

    def __str__(self) -> str:
        where = " ".join(
            part
            for part in (
                self.file or "",
                f"#{self.sequence_no}" if self.sequence_no is not None else "",
                self.event_id or "",
            )
            if part
        )
        text = f"{self.kind}{' at ' + where if where else ''}: {self.detail}"
        if self.expected is not None or self.got is not None:
            text += f" (expected {self.expected}, got {self.got})"
        return text


@dataclass
class Report:
    """The result of :func:`agentledger.evidence.verify_bundle`; ``ok`` when nothing failed."""

    event_id: str | None = None
    agent: str | None = None
    problems: list[Problem] = field(default_factory=list)
    #: things not checked or checked only in part (HMAC links, anchors of keys not given)
    notes: list[str] = field(default_factory=list)
    records: int = 0
    erased: int = 0
    amended: int = 0
    #: whether chain links, erasure marks and seals were recomputed (not for HMAC chains)
    links_checked: bool = True
    #: ``(agent, sequence_no)`` of records no checked signed head reaches through links
    #: (before an erased event, whose own link cannot be recomputed)
    unanchored: list[tuple[str, int]] = field(default_factory=list)
    #: the signed heads checked: ``{agent, sequence_no, chain_hash, key_id, signed_at}``
    heads: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No check failed."""
        return not self.problems

    def add(self, kind: str, detail: str, **where: Any) -> None:
        """Record a failed check."""
        self.problems.append(Problem(kind, detail, **where))

    def summary(self) -> str:
        """One line for people."""
        if self.ok:
            text = (
                f"bundle verified: event {self.event_id} of agent {self.agent!r}, "
                f"{self.records} records"
            )
            if self.erased:
                text += f" ({self.erased} erased)"
            if not self.links_checked:
                text += "; HMAC chain: links not recomputed, see notes"
            return text
        return f"bundle NOT verified: {len(self.problems)} problems"
