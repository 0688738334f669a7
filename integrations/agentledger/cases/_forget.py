"""Erasure for case files: find the cases exported from a subject's sessions and delete them.

A case names its subject only through ``subject_ref`` (``sha256:`` of the first ``user_id``,
``subject_id``, ``customer_id`` or ``subject`` found in the session, else of
``agent/session``), so the subject's value is hashed the same way and compared. A case is also
the subject's when its text still holds the value (a field the pseudonymiser does not touch)
or its ``source_session`` names the value as a whole token (``chat-alice@example.com``). A
cassette next to a removed case goes with it unless a kept case uses it too.

:func:`forget_sessions` removes the cases exported from given ``(agent, session)`` pairs (what
a retention sweep erased; ``agentledger retention run --cases-dir``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from agentledger.cases._model import Case, load_cases
from agentledger.protocol.subjects import names_value

__all__ = ["CaseErasure", "ErasedCase", "forget_cases", "forget_sessions", "subject_ref_of"]


def subject_ref_of(subject: str) -> str:
    """The ``subject_ref`` an export writes for a session whose subject is ``subject``."""
    return "sha256:" + hashlib.sha256(subject.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class ErasedCase:
    """One case file removed (or that would be): its path, id, why it matched
    (``subject_ref``, ``text`` or ``source_session``) and the cassette removed with it."""

    path: Path
    case_id: str
    matched: tuple[str, ...]
    cassette: Path | None = None


@dataclass(slots=True)
class CaseErasure:
    """What :func:`forget_cases` did: the files it read and the cases it removed."""

    scanned: int = 0
    removed: list[ErasedCase] = field(default_factory=list)
    dry_run: bool = False

    def as_dict(self) -> dict[str, object]:
        """A JSON-ready report."""
        return {
            "scanned": self.scanned,
            "dry_run": self.dry_run,
            "removed": [
                {
                    "path": str(case.path),
                    "case_id": case.case_id,
                    "matched": list(case.matched),
                    "cassette": str(case.cassette) if case.cassette else None,
                }
                for case in self.removed
            ],
        }


def forget_cases(directory: str | Path, subject: str, *, dry_run: bool = False) -> CaseErasure:
    """Delete every case under ``directory`` exported from ``subject``'s sessions.

    Args:
        directory: a case directory (searched recursively) or one case file.
        subject: the subject's value (a user id, an email...) or a ``sha256:`` reference.
        dry_run: only report.

    Raises:
        CaseError: the directory is missing or holds an invalid case file.
        ValueError: ``subject`` is empty.
    """
    if not subject.strip():
        raise ValueError("the subject must not be empty")
    given_ref = subject.startswith("sha256:") and len(subject) == 71
    ref = subject if given_ref else subject_ref_of(subject)
    literal = json.dumps(subject, ensure_ascii=False)[1:-1]
    root = Path(directory)
    if root.is_dir() and not any(root.rglob("*.json")):
        return CaseErasure(dry_run=dry_run)
    cases = load_cases(root)

    def matched(path: Path, case: Case) -> list[str]:
        why: list[str] = []
        if case.subject_ref == ref:
            why.append("subject_ref")
        if not given_ref and literal in path.read_text(encoding="utf-8"):
            why.append("text")
        if case.source_session and names_value(case.source_session, subject):
            why.append("source_session")
        return why

    return _remove(cases, matched, dry_run)


def forget_sessions(
    directory: str | Path, sessions: Iterable[tuple[str, str]], *, dry_run: bool = False
) -> CaseErasure:
    """Delete every case under ``directory`` exported from one of ``sessions``
    (``(agent, session_id)`` pairs, e.g. the sessions a retention sweep erased): a case
    matches when its ``source_agent`` and ``source_session`` are such a pair.

    Raises:
        CaseError: the directory is missing or holds an invalid case file.
    """
    wanted = set(sessions)
    root = Path(directory)
    if root.is_dir() and not any(root.rglob("*.json")):
        return CaseErasure(dry_run=dry_run)

    def matched(_path: Path, case: Case) -> list[str]:
        pair = (case.source_agent or "", case.source_session or "")
        return ["source_session"] if pair in wanted else []

    return _remove(load_cases(root), matched, dry_run)


def _remove(
    cases: list[tuple[Path, Case]],
    matched: Callable[[Path, Case], list[str]],
    dry_run: bool,
) -> CaseErasure:
    """Delete the cases ``matched`` gives reasons for, with their cassettes unless another
    kept case shares one."""
    outcome = CaseErasure(scanned=len(cases), dry_run=dry_run)
    kept_cassettes: set[Path] = set()
    doomed: list[tuple[Path, str, tuple[str, ...], Path | None]] = []
    for path, case in cases:
        cassette = (path.parent / case.cassette.path).resolve() if case.cassette else None
        why = matched(path, case)
        if why:
            doomed.append((path, case.case_id, tuple(why), cassette))
        elif cassette is not None:
            kept_cassettes.add(cassette)
    for path, case_id, why_, cassette in doomed:
        shared = cassette is None or cassette in kept_cassettes or not cassette.is_file()
        removed = ErasedCase(path, case_id, why_, None if shared else cassette)
        outcome.removed.append(removed)
        if not dry_run:
            path.unlink(missing_ok=True)
            if removed.cassette is not None:
                removed.cassette.unlink(missing_ok=True)
    return outcome
