"""The sessions of an agent a corpus can be drawn from (``cases export --sample``).

The agent's events are read newest first with the stable cursor of ``GET /v1/events`` (from
``since`` on, when given), so every session is seen however many there are; the session list
(``GET /v1/sessions``) stops at 1,000 and has no cursor. Per session this keeps the time of its
last event, whether it holds a ``user_message`` (a session without one has nothing to replay and
is no candidate) and its stratum label.

A session's label under ``key`` is the value of ``key`` in the metadata of its oldest event
that has it, else in the data of its oldest ``user_message`` that has it. Values that are not
strings are written as JSON (``3``, ``true``); an empty string or ``null`` is no label.

With ``since``, the events before it are not read; a session that started before ``since`` and
is still in the window may then lack its label or its user message in what was read, so each
such session is read whole (``GET /v1/sessions/{id}/events``) before it is classified.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from agentledger.cases._sample import Candidate
from agentledger.client import Event, Ledger
from agentledger.client import vocabulary as v

__all__ = ["CandidateScan", "label_of", "read_candidates"]

#: Events per page of the scan (the server's maximum).
PAGE_SIZE = 1000
#: Most events read when a session is read whole to find its label or user message.
MAX_SESSION_EVENTS = 10_000


@dataclass
class CandidateScan:
    """What the scan found: the ``candidates`` and the sessions left out because they hold
    no user message (``without_input``, sorted)."""

    candidates: list[Candidate] = field(default_factory=list)
    without_input: list[str] = field(default_factory=list)


def _label_value(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def label_of(event: Event, key: str) -> str | None:
    """The label ``key`` of one event: its metadata's value, else (for a ``user_message``)
    its data's value; ``None`` when it has neither."""
    found = _label_value((event.metadata or {}).get(key))
    if found is None and event.event == v.USER_MESSAGE and isinstance(event.data, dict):
        found = _label_value(event.data.get(key))
    return found


@dataclass
class _Seen:
    last: dt.datetime
    has_input: bool = False
    label: str | None = None
    label_from_metadata: bool = False


def _fold(seen: _Seen, event: Event, key: str | None) -> None:
    """Take one event, read newest first: the oldest label seen wins, metadata before data."""
    if event.event == v.USER_MESSAGE and not event.extra.get("erased"):
        seen.has_input = True
    if key is None:
        return
    from_metadata = _label_value((event.metadata or {}).get(key))
    if from_metadata is not None:
        seen.label, seen.label_from_metadata = from_metadata, True
    elif not seen.label_from_metadata:
        found = label_of(event, key)
        if found is not None:
            seen.label = found


def _scan(events: Iterable[Event], key: str | None) -> dict[str, _Seen]:
    sessions: dict[str, _Seen] = {}
    for event in events:
        if not event.session_id:
            continue
        when = event.time()
        seen = sessions.get(event.session_id)
        if seen is None:
            seen = sessions[event.session_id] = _Seen(last=when)
        elif when > seen.last:
            seen.last = when
        _fold(seen, event, key)
    return sessions


def read_candidates(
    ledger: Ledger,
    *,
    agent: str,
    stratify_by: str | None = None,
    since: dt.datetime | None = None,
    page_size: int = PAGE_SIZE,
) -> CandidateScan:
    """Every session of ``agent`` with its last activity and its ``stratify_by`` label.

    Args:
        ledger: a client with read access to ``agent``.
        agent: the agent.
        stratify_by: the label key (``None``: no labels are read).
        since: read only sessions with an event at or after this time.
        page_size: events per request (1..1000).

    Raises:
        agentledger.client.LedgerError: the server refused or could not be reached.
    """
    after = None if since is None else since - dt.timedelta(microseconds=1)  # `after` is strict
    sessions = _scan(ledger.iter_events(agent=agent, after=after, page_size=page_size), stratify_by)
    if since is not None:
        for session_id, seen in sessions.items():
            if seen.has_input and (stratify_by is None or seen.label is not None):
                continue
            whole = ledger.replay(session_id, agent=agent, limit=MAX_SESSION_EVENTS)
            again = _Seen(last=seen.last)
            for event in reversed(whole):  # newest first, as in the scan
                _fold(again, event, stratify_by)
            sessions[session_id] = again
    scan = CandidateScan()
    for session_id in sorted(sessions):
        seen = sessions[session_id]
        if seen.has_input:
            scan.candidates.append(Candidate(session_id, seen.label, seen.last))
        else:
            scan.without_input.append(session_id)
    return scan
