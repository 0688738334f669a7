"""The tools of ``agentledger mcp``: lineage, replay, search, verification and logging.

Each tool is an ``async`` method of :class:`LedgerTools`; its docstring is what the model reads,
its parameters carry JSON-schema constraints. How tools answer and fail:
``docs/design/mcp.md``.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any, Final, Literal

import orjson
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult
from pydantic import Field

from agentledger.client import (
    APIStatusError,
    AsyncLedger,
    Event,
    LedgerError,
    NotFoundError,
    TransportError,
)
from agentledger.mcp_server._lineage import impact_answer, why_answer
from agentledger.mcp_server._parents import MAX_SESSION_PARENTS, SessionParents
from agentledger.mcp_server._text import (
    UUID_PATTERN,
    AgentName,
    EventId,
    SessionId,
    answer,
    detail,
    event_json,
    trim,
)
from agentledger.protocol import limits
from agentledger.protocol.limits import AGENT_PATTERN
from agentledger.timeline import event_line, text_lines

__all__ = ["MAX_SESSION_PARENTS", "LedgerTools"]

#: Most events ``replay_session``, ``why`` and ``impact`` return in one call (the lineage
#: tools' default limit is the API's, which is this many).
MAX_EVENTS_PER_CALL: Final = 10_000
#: How long ``log_event`` waits for the event to be stored before answering "queued" (seconds).
LOG_CONFIRM_TIMEOUT_S: Final = 5.0


class LedgerTools:
    """The MCP tools over one ledger client.

    Args:
        ledger: the :class:`~agentledger.client.AsyncLedger` every tool reads and logs
            through; its ``agent`` is the default agent of reads and of ``log_event``.

    State: only the last event ``log_event`` logged in each session (at most
    :data:`MAX_SESSION_PARENTS` sessions), so that an event logged without ``parent_id`` in a
    session hangs under the previous one logged there. It belongs to this instance, which
    serves one MCP connection; nothing is shared through process-global state between agents
    or connections (field case H17).

    Each tool is an ``async`` method whose docstring is the description MCP clients show the
    model (so it names no exceptions). Every one raises ``mcp``'s ``ToolError`` (sent to the
    client as a result with ``isError: true``) for what the caller can fix: an unknown event
    or session (404), a refused request (401/403/422, with the ledger's field names), an
    unreachable ledger (transport error after the client's read retries, about 10 s at most),
    no agent to read, or an event the ledger would not store (``log_event``). Bad argument
    types and ranges are refused by the SDK against the JSON schema before a tool runs.
    """

    def __init__(self, ledger: AsyncLedger) -> None:
        self.ledger = ledger
        self._parents = SessionParents()

    @contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        """Turn client errors into tool errors a model can read (never a crash)."""
        try:
            yield
        except NotFoundError as error:
            raise ToolError(f"{what}: not found ({detail(error)})") from error
        except APIStatusError as error:
            raise ToolError(
                f"{what}: the ledger answered {error.status_code}: {detail(error)}"
            ) from error
        except TransportError as error:
            raise ToolError(
                f"{what}: cannot reach the ledger at {self.ledger.url} ({error})"
            ) from error
        except LedgerError as error:  # ConfigurationError (no agent for this read) among them
            raise ToolError(f"{what}: {error}") from error

    def _agent(self, agent: str | None) -> str:
        name = agent or self.ledger.agent
        if not name:
            raise ToolError(
                "no agent: pass agent=..., or start the server with --agent or AGENTLEDGER_AGENT"
            )
        return name

    # -- lineage --------------------------------------------------------------------------

    async def why(
        self,
        event_id: EventId,
        depth: Annotated[
            int,
            Field(
                description="Most cause hops to follow back (as the ledger's API).",
                ge=0,
                le=limits.LINEAGE_DEPTH_MAX,
            ),
        ] = limits.WHY_DEPTH_DEFAULT,
        limit: Annotated[
            int,
            Field(description="Most events in the answer.", ge=1, le=MAX_EVENTS_PER_CALL),
        ] = limits.LINEAGE_LIMIT_DEFAULT,
    ) -> CallToolResult:
        """Explain an event: every event it was computed from (its causes, their causes, back
        to the user's message), as a graph: events with ids and edges labelled with their kind
        (read: a model call read this input; requested: a model output asked for this tool
        call; closes: an end or result closes its start; produced: the model call that
        produced an answer). Steps an event merely ran inside are not causes. Use it on a
        wrong answer, a failed tool call or any surprising event to see what led to it."""
        with self._errors(f"why({event_id})"):
            result = await self.ledger.why(event_id, depth=depth, limit=limit)
        return why_answer(result)

    async def impact(
        self,
        event_id: EventId,
        limit: Annotated[
            int,
            Field(description="Most events in the answer.", ge=1, le=MAX_EVENTS_PER_CALL),
        ] = limits.LINEAGE_LIMIT_DEFAULT,
        depth: Annotated[
            int,
            Field(
                description="Most effect hops to follow (as the ledger's API).",
                ge=0,
                le=limits.LINEAGE_DEPTH_MAX,
            ),
        ] = limits.IMPACT_DEPTH_DEFAULT,
    ) -> CallToolResult:
        """Everything computed from an event: every later event that used its output, directly
        or indirectly, as a graph of events with ids and edges labelled with their kind (the
        mirror of why). Use it to see what a bad tool result or a wrong retrieval
        contaminated."""
        with self._errors(f"impact({event_id})"):
            result = await self.ledger.impact(event_id, limit=limit, depth=depth)
            asked = await self.ledger.get_event(event_id)
        return impact_answer(result, asked)

    # -- sessions and search --------------------------------------------------------------

    async def replay_session(
        self,
        session_id: SessionId,
        limit: Annotated[
            int,
            Field(
                description="Most events to return (oldest first).", ge=1, le=MAX_EVENTS_PER_CALL
            ),
        ] = 500,
        agent: Annotated[
            str | None,
            Field(
                description="Only this agent's events (default: every agent in the session).",
                pattern=AGENT_PATTERN,
            ),
        ] = None,
    ) -> CallToolResult:
        """Replay a session: its events oldest first, indented under the event that caused
        each one (user messages, model calls, tool calls and results, retrievals, steps)."""
        with self._errors(f"replay_session({session_id})"):
            events = await self.ledger.replay(  # one more than asked: tells whether there is more
                session_id, agent=agent, all_agents=agent is None, limit=limit + 1
            )
        truncated = len(events) > limit
        events = events[:limit]
        head = f"session {session_id}: {len(events)} events"
        if truncated:
            head += f" (the first {limit}; raise limit for more)"
        lines = [head, *text_lines(events)] if events else [f"session {session_id}: no events"]
        return answer(
            "\n".join(lines),
            {
                "session_id": session_id,
                "count": len(events),
                "truncated": truncated,
                "events": [event_json(e) for e in events],
            },
        )

    async def list_sessions(
        self,
        limit: Annotated[int, Field(description="Most sessions to list.", ge=1, le=1_000)] = 20,
        agent: AgentName = None,
    ) -> CallToolResult:
        """List an agent's most recent sessions with their event counts, time span and event
        types. Pass a session_id from here to replay_session."""
        name = self._agent(agent)
        with self._errors("list_sessions"):
            sessions = await self.ledger.sessions(agent=name, limit=limit)
        lines = [f"{len(sessions)} sessions of {name}, newest first"]
        for s in sessions:
            kinds = ", ".join(s.event_types[:8]) + ("…" if len(s.event_types) > 8 else "")
            lines.append(
                f"- {s.session_id}: {s.event_count} events, {s.started_at} → {s.ended_at} ({kinds})"
            )
        return answer(
            "\n".join(lines),
            {
                "agent": name,
                "sessions": [
                    {
                        "session_id": s.session_id,
                        "event_count": s.event_count,
                        "event_types": s.event_types,
                        "started_at": s.started_at,
                        "ended_at": s.ended_at,
                        "agents": s.agents,
                    }
                    for s in sessions
                ],
            },
        )

    async def search_events(
        self,
        query: Annotated[
            str, Field(description="What to look for, in words.", min_length=1, max_length=1_000)
        ],
        mode: Annotated[
            Literal["auto", "keyword", "semantic", "hybrid"],
            Field(
                description="keyword (full text), semantic (embeddings, when the server has "
                "them), hybrid (both, fused) or auto (hybrid when possible, else keyword)."
            ),
        ] = "auto",
        limit: Annotated[int, Field(description="Most events to return.", ge=1, le=100)] = 10,
        agent: AgentName = None,
    ) -> CallToolResult:
        """Search an agent's events (messages, tool calls and results, retrievals...) by
        keywords or meaning, best match first. Use it to find sessions where something
        happened, e.g. "asked for the invoice again" or "refund over limit"."""
        name = self._agent(agent)
        with self._errors("search_events"):
            found = await self.ledger.search(query, agent=name, limit=limit, mode=mode)
        lines = [f"{len(found.results)} events of {name} match {query!r} ({mode})"]
        for rank, hit in enumerate(found.results, 1):
            score = "" if hit.score is None else f"{hit.score:.3f} "
            lines.append(f"{rank}. {score}{event_line(hit.event).lstrip()[2:]}")
        return answer(
            "\n".join(lines),
            {
                "query": query,
                "mode": mode,
                "agent": name,
                "results": [
                    {"score": hit.score, "event": event_json(hit.event)} for hit in found.results
                ],
            },
        )

    # -- integrity, behaviour, state -------------------------------------------------------

    async def verify_chain(
        self,
        anchor: Annotated[
            str | None,
            Field(
                description="A chain_hash saved earlier (e.g. from a previous verify_chain): "
                "also proves that nothing up to it was removed or rewritten since.",
                min_length=1,
                max_length=128,
            ),
        ] = None,
        agent: AgentName = None,
    ) -> CallToolResult:
        """Verify an agent's tamper-evident hash chain: every stored event is checked
        against its hash and its predecessor; reports the first changed, missing or reordered
        event. Returns the chain head to keep as a future anchor."""
        name = self._agent(agent)
        with self._errors("verify_chain"):
            report = await self.ledger.verify_chain(agent=name, anchor=anchor)
        verdict = "INTACT" if report.intact else "BROKEN"
        lines = [f"hash chain of {name}: {verdict}. {report.summary}".rstrip()]
        lines += [
            f"- {p.kind} at sequence {p.sequence_no} (event {p.event_id})" for p in report.problems
        ]
        head = report.chain_head
        if head is not None:
            lines.append(f"chain head: sequence {head.sequence_no}, chain_hash {head.chain_hash}")
        return answer(
            "\n".join(lines),
            {
                "agent": name,
                "intact": report.intact,
                "summary": report.summary,
                "problems": [
                    {"kind": p.kind, "event_id": p.event_id, "sequence_no": p.sequence_no}
                    for p in report.problems
                ],
                "chain_head": (
                    None
                    if head is None
                    else {"sequence_no": head.sequence_no, "chain_hash": head.chain_hash}
                ),
            },
        )

    async def get_baseline(
        self,
        window: Annotated[
            Literal["24h", "7d", "30d"] | None,
            Field(
                description="Recent window by time. Default: the agent's last recent_sessions "
                "sessions against the ones before."
            ),
        ] = None,
        recent_sessions: Annotated[
            int, Field(description="Recent window by count of sessions.", ge=1, le=10_000)
        ] = 50,
        agent: AgentName = None,
    ) -> CallToolResult:
        """Compare an agent's recent behaviour with its baseline (earlier sessions): event mix,
        tool-call transitions, errors, depth, tokens. Gives a drift score, a verdict (stable,
        drift, insufficient_data) and the biggest changes. Use it after a prompt or model
        change."""
        name = self._agent(agent)
        with self._errors("get_baseline"):
            report = await self.ledger.baseline(
                agent=name, window=window, recent_window=None if window else recent_sessions
            )
        raw = report.raw
        sessions = raw.get("sessions") or {}
        score = "n/a" if report.drift_score is None else f"{report.drift_score:.4f}"
        lines = [
            f"{name}: {report.verdict}, drift score {score} (baseline "
            f"{sessions.get('baseline', 0)} sessions, recent {sessions.get('recent', 0)})"
        ]
        drift = raw.get("drift") or {}
        if drift.get("reason"):
            lines.append(str(drift["reason"]))
        lines += [f"- {reason}" for reason in drift.get("reasons", [])]
        for change in drift.get("biggest_changes", [])[:10]:
            lines.append(
                f"- {change.get('kind')} {change.get('key')}: {change.get('baseline')} → "
                f"{change.get('recent')}"
            )
        return answer("\n".join(lines), {"agent": name, **raw})

    async def state_at(
        self,
        timestamp: Annotated[
            dt.datetime,
            Field(description="ISO-8601 time, e.g. 2026-05-01T15:00:00Z (UTC when no offset)."),
        ],
        agent: AgentName = None,
    ) -> CallToolResult:
        """The agent's key/value state (from state_set / state_delete events) as it was at a
        point in time: what the agent believed then."""
        name = self._agent(agent)
        when = timestamp if timestamp.tzinfo else timestamp.replace(tzinfo=dt.UTC)
        with self._errors("state_at"):
            state = await self.ledger.at(when, agent=name)
        cut = " (truncated)" if state.truncated else ""
        lines = [
            f"{name} at {state.at}: {len(state.state)} keys after {state.event_count} events{cut}"
        ]
        lines += [
            f"- {key} = {orjson.dumps(value).decode()}"
            for key, value in sorted(state.state.items())
        ]
        return answer(
            "\n".join(lines),
            {
                "agent": name,
                "at": state.at,
                "event_count": state.event_count,
                "truncated": state.truncated,
                "state": trim(state.state),
            },
        )

    # -- writing --------------------------------------------------------------------------

    async def log_event(
        self,
        event: Annotated[
            str,
            Field(
                description="Event type: user_message, assistant_response, tool_call, "
                "tool_result, tool_error, retrieval, step_start, step_end, state_set, note...",
                min_length=1,
                max_length=255,
            ),
        ],
        data: Annotated[
            dict[str, Any] | None,
            Field(
                description='The event\'s JSON object, e.g. {"text": "..."} or '
                '{"tool": "search", "args": {...}}.'
            ),
        ] = None,
        session_id: Annotated[
            str | None,
            Field(description="Session the event belongs to.", min_length=1, max_length=255),
        ] = None,
        parent_id: Annotated[
            str | None,
            Field(
                description="The event that caused this one. Omitted with a session_id: the "
                "last event logged through this server in that session. Omitted without one: "
                "a new root.",
                pattern=UUID_PATTERN,
            ),
        ] = None,
    ) -> CallToolResult:
        """Log one event to the ledger under this server's agent, linked to the event that
        caused it, and return its event_id (pass it as parent_id of the next event). Values
        under secret-named keys (api_key, password, token, authorization...) are redacted
        before the event leaves this process."""
        name = self._agent(None)
        if parent_id is not None:
            parent: str | None = str(uuid.UUID(parent_id))
            source = "explicit"
        elif session_id is not None and (last := self._parents.get(session_id)) is not None:
            parent, source = last, "previous event in session"
        else:
            parent, source = None, "none (root)"
        ref = self.ledger.log(
            event, data or {}, session_id=session_id, parent_id=parent, agent=name
        )
        if session_id is not None:
            # Remembered at once, so concurrent calls in one session still form a chain...
            self._parents.remember(session_id, ref.event_id)
        try:
            stored = await self._confirm(ref.event_id)
        except ToolError:
            # ...and forgotten again when the ledger refuses the event: the next one hangs
            # under the last event that exists, never under one that will not be stored.
            if session_id is not None:
                self._parents.forget(session_id, ref.event_id, parent)
            raise
        if stored is not None:
            status = f"stored as sequence {stored.sequence_no} of {name}'s chain"
        else:
            status = "queued (the ledger is not reachable now; it is kept and sent later)"
        return answer(
            f"logged {event} {ref.event_id} (parent: {parent or 'none'}, {source}); {status}",
            {
                "event_id": ref.event_id,
                "agent": name,
                "session_id": session_id,
                "parent_id": parent,
                "parent_source": source,
                "stored": stored is not None,
                "sequence_no": None if stored is None else stored.sequence_no,
            },
        )

    async def _confirm(self, event_id: str) -> Event | None:
        """The stored event once the sender delivered it; ``None`` while it is only queued
        or spilled (ledger unreachable, or slower than :data:`LOG_CONFIRM_TIMEOUT_S`).

        Raises:
            ToolError: the ledger answered but does not have the event (it was rejected),
                or it refuses this key or URL (the event is kept in the spill meanwhile).
        """
        flushed = await self.ledger.flush(LOG_CONFIRM_TIMEOUT_S)
        if not flushed.complete:
            stats = self.ledger.stats()
            if stats.last_error_kind in {"unauthorized", "forbidden", "not_found"}:
                raise ToolError(
                    f"log_event: the ledger did not store {event_id}: {stats.last_error}"
                )
            return None
        try:
            return await self.ledger.get_event(event_id)
        except NotFoundError as error:
            raise ToolError(
                f"log_event: the ledger did not store {event_id}: it was rejected "
                "(the reason is in the agentledger log on stderr)"
            ) from error
        except LedgerError:
            return None
