"""Reads described as data: each read of the twins is a :class:`Call` (method, path, query,
body, parser) built here, without I/O, and sent by :class:`AsyncLedger` or :class:`Ledger` with
its own httpx client."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar
from urllib.parse import quote

import httpx

from agentledger.client._errors import ConfigurationError, status_error_from_response
from agentledger.client._models import (
    AgentInfo,
    ApiKey,
    BaselineReport,
    ChainReport,
    DecisionView,
    Event,
    ForgetResult,
    ImpactResult,
    KeyRotation,
    MemoryContext,
    RetentionEntry,
    RetentionPolicies,
    RetentionPolicy,
    RetentionRun,
    SearchResult,
    Session,
    SessionDiff,
    SignedHead,
    SigningKey,
    StateAt,
    WhyResult,
)
from agentledger.client._retry import RetryPolicy

__all__ = ["READ_RETRY", "Call", "ReadCalls"]

T = TypeVar("T")

#: Read requests: fewer attempts and a short deadline (the caller is waiting).
READ_RETRY: Final = RetryPolicy(deadline_s=10.0, max_attempts=3)


@dataclass(frozen=True)
class Call(Generic[T]):
    """One read request and how to parse its JSON answer."""

    method: str
    path: str
    parse: Callable[[Any], T]
    params: dict[str, Any] | None = None
    json: Any = None
    expect_json: bool = True


def _seg(value: str) -> str:
    """``value`` as one URL path segment: every reserved character percent-encoded (RFC 3986
    section 3.3), so a session id such as ``a/b``, ``x?y`` or ``../other`` names exactly itself
    (httpx would otherwise split it or remove its dot segments)."""
    return quote(str(value), safe="")


def _drop_none(params: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if v is not None}


def _iso(value: dt.datetime | str | None) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return value.isoformat()


def _list_of(parse: Callable[[dict[str, Any]], T], *keys: str) -> Callable[[Any], list[T]]:
    members = keys or ("items", "events", "sessions", "agents", "keys", "results")

    def parse_list(body: Any) -> list[T]:
        if isinstance(body, dict):  # tolerate {"items": [...]} style answers
            for key in members:
                if isinstance(body.get(key), list):
                    body = body[key]
                    break
        return [parse(x) for x in body or [] if isinstance(x, dict)]

    return parse_list


def _replay_events(body: Any) -> list[Event]:
    events = body.get("events") if isinstance(body, dict) else body
    return [Event.from_wire(e) for e in events or [] if isinstance(e, dict)]


class ReadCalls:
    """The :class:`Call` of every read; the twins send them (``self.agent`` is the default
    agent of reads)."""

    agent: str | None

    def _agent_param(self, agent: str | None) -> str:
        name = agent or self.agent
        if not name:
            raise ConfigurationError("this read needs an agent: pass agent= or set one")
        return name

    def _call_get_event(self, event_id: str) -> Call[Event]:
        return Call("GET", f"/v1/events/{_seg(event_id)}", Event.from_wire)

    def _call_why(self, event_id: str, depth: int, limit: int) -> Call[WhyResult]:
        return Call(
            "GET",
            f"/v1/events/{_seg(event_id)}/why",
            WhyResult.from_wire,
            {"depth": depth, "limit": limit},
        )

    def _call_decision(self, event_id: str) -> Call[DecisionView]:
        return Call("GET", f"/v1/events/{_seg(event_id)}/decision", DecisionView.from_wire)

    def _call_impact(self, event_id: str, depth: int, limit: int) -> Call[ImpactResult]:
        return Call(
            "GET",
            f"/v1/events/{_seg(event_id)}/impact",
            ImpactResult.from_wire,
            {"depth": depth, "limit": limit},
        )

    def _call_replay(
        self, session_id: str, agent: str | None, limit: int, all_agents: bool
    ) -> Call[list[Event]]:
        params = _drop_none({"agent": None if all_agents else agent or self.agent, "limit": limit})
        return Call("GET", f"/v1/sessions/{_seg(session_id)}/events", _replay_events, params)

    def _call_sessions(self, agent: str | None, limit: int) -> Call[list[Session]]:
        params = _drop_none({"agent": agent or self.agent, "limit": limit})
        return Call("GET", "/v1/sessions", _list_of(Session.from_wire), params)

    def _call_events_page(
        self,
        agent: str | None,
        *,
        limit: int,
        event_type: str | None,
        session_id: str | None,
        before: dt.datetime | str | None,
        after: dt.datetime | str | None,
        cursor: str | None,
    ) -> Call[list[Event]]:
        params = _drop_none(
            {
                "agent": self._agent_param(agent),
                "limit": limit,
                "event_type": event_type,
                "session_id": session_id,
                "before": _iso(before),
                "after": _iso(after),
                "cursor": cursor,
            }
        )
        return Call("GET", "/v1/events", _list_of(Event.from_wire), params)

    def _call_verify(
        self, agent: str | None, anchor: str | None, after_seq: int | None
    ) -> Call[ChainReport]:
        params = _drop_none(
            {"agent": self._agent_param(agent), "anchor": anchor, "after_seq": after_seq}
        )
        return Call("GET", "/v1/events/chain", ChainReport.from_wire, params)

    def _call_search(
        self,
        query: str,
        agent: str | None,
        limit: int,
        mode: str,
        include_superseded: bool,
    ) -> Call[SearchResult]:
        body = _drop_none(
            {
                "query": query,
                "agent": agent or self.agent,
                "limit": limit,
                "mode": mode,
                "include_superseded": include_superseded,
            }
        )
        return Call("POST", "/v1/search", SearchResult.from_wire, json=body)

    def _call_baseline(
        self, agent: str | None, recent_window: str | int | None, window: str | None
    ) -> Call[BaselineReport]:
        name = self._agent_param(agent)
        params = _drop_none({"recent_window": recent_window, "window": window})
        return Call(
            "GET",
            f"/v1/agents/{_seg(name)}/baseline",
            lambda body: BaselineReport.from_wire(name, body),
            params,
        )

    def _call_behavior_change(
        self,
        agent: str | None,
        window: str | None,
        from_ts: dt.datetime | str | None,
        to_ts: dt.datetime | str | None,
    ) -> Call[BaselineReport]:
        name = self._agent_param(agent)
        params = _drop_none({"window": window, "from_ts": _iso(from_ts), "to_ts": _iso(to_ts)})
        return Call(
            "GET",
            f"/v1/agents/{_seg(name)}/behavior-change",
            lambda body: BaselineReport.from_wire(name, body),
            params,
        )

    def _call_at(self, timestamp: dt.datetime | str, agent: str | None) -> Call[StateAt]:
        params = {"agent": self._agent_param(agent), "timestamp": _iso(timestamp)}
        return Call("GET", "/v1/events/at", StateAt.from_wire, params)

    def _call_forget(
        self,
        filter_key: str,
        filter_value: str | int | float | bool,
        agent: str | None,
        dry_run: bool,
    ) -> Call[ForgetResult]:
        body = {
            "filter_key": filter_key,
            "filter_value": filter_value,
            "agent": self._agent_param(agent),
            "dry_run": dry_run,
        }
        return Call("DELETE", "/v1/memory/forget", ForgetResult.from_wire, json=body)

    def _call_context_for(
        self, task: str, agent: str | None, max_tokens: int, session_id: str | None
    ) -> Call[MemoryContext]:
        body = _drop_none(
            {
                "agent": self._agent_param(agent),
                "task": task,
                "max_tokens": max_tokens,
                "session_id": session_id,
            }
        )
        return Call("POST", "/v1/memory/context", MemoryContext.from_wire, json=body)

    def _call_memory_diff(self, session_id: str, agent: str | None) -> Call[SessionDiff]:
        params = _drop_none({"agent": agent or self.agent})
        return Call("GET", f"/v1/memory/diff/{_seg(session_id)}", SessionDiff.from_wire, params)

    def _call_agents(self) -> Call[list[AgentInfo]]:
        return Call("GET", "/v1/agents", _list_of(AgentInfo.from_wire))

    def _call_create_key(
        self, name: str, agent: str | None, scope: str, expires_in_days: int | None
    ) -> Call[ApiKey]:
        body = _drop_none(
            {"name": name, "agent": agent, "scope": scope, "expires_in_days": expires_in_days}
        )
        return Call("POST", "/v1/keys", ApiKey.from_wire, json=body)

    def _call_list_keys(self) -> Call[list[ApiKey]]:
        return Call("GET", "/v1/keys", _list_of(ApiKey.from_wire))

    def _call_revoke_key(self, key_id: str) -> Call[None]:
        return Call("DELETE", f"/v1/keys/{_seg(key_id)}", lambda _: None, expect_json=False)

    def _call_retention_policies(self) -> Call[RetentionPolicies]:
        return Call("GET", "/v1/retention/policies", RetentionPolicies.from_wire)

    def _call_set_retention(self, keep: str, agent: str | None) -> Call[RetentionPolicy]:
        return Call("PUT", _retention_path(agent), RetentionPolicy.from_wire, json={"keep": keep})

    def _call_unset_retention(self, agent: str | None) -> Call[bool]:
        return Call("DELETE", _retention_path(agent), lambda body: bool((body or {})["removed"]))

    def _call_run_retention(self, dry_run: bool, agent: str | None) -> Call[RetentionRun]:
        body = _drop_none({"dry_run": dry_run, "agent": agent})
        return Call("POST", "/v1/retention/run", RetentionRun.from_wire, json=body)

    def _call_retention_log(self, agent: str | None, limit: int) -> Call[list[RetentionEntry]]:
        params = _drop_none({"agent": agent, "limit": limit})
        return Call(
            "GET",
            "/v1/retention/log",
            lambda body: [RetentionEntry.from_wire(e) for e in (body or {}).get("entries") or []],
            params,
        )

    def _call_signing_keys(self) -> Call[list[SigningKey]]:
        return Call("GET", "/v1/signing-keys", _list_of(SigningKey.from_wire))

    def _call_sign_head(self, agent: str | None) -> Call[SignedHead]:
        body = {"agent": self._agent_param(agent)}
        return Call("POST", "/v1/signed-heads", SignedHead.from_wire, json=body)

    def _call_signed_heads(self, agent: str | None, limit: int) -> Call[list[SignedHead]]:
        params = {"agent": self._agent_param(agent), "limit": limit}
        return Call("GET", "/v1/signed-heads", _list_of(SignedHead.from_wire, "heads"), params)

    def _call_rotate_signing_key(self) -> Call[KeyRotation]:
        return Call("POST", "/v1/signing-keys/rotate", KeyRotation.from_wire)

    def _call_evidence(self, event_id: str) -> Call[bytes]:
        return Call(
            "GET", f"/v1/events/{_seg(event_id)}/evidence", lambda _: b"", expect_json=False
        )

    @staticmethod
    def _body(response: httpx.Response) -> bytes:
        """The raw body of an answer that is not JSON (a zip); an error status raises."""
        if response.status_code >= 400:
            raise status_error_from_response(response)
        return response.content

    def _call_health(self) -> Call[dict[str, Any]]:
        return Call("GET", "/health", lambda body: dict(body or {}))

    @staticmethod
    def _parse(call: Call[T], response: httpx.Response) -> T:
        """Raise the mapped error for a 4xx/5xx, else parse the JSON body."""
        if response.status_code >= 400:
            raise status_error_from_response(response)
        if not call.expect_json or not response.content:
            return call.parse(None)
        return call.parse(response.json())


def _retention_path(agent: str | None) -> str:
    """The policy route of ``agent`` (``None``: the default policy)."""
    if agent is None:
        return "/v1/retention/default"
    return f"/v1/retention/policies/{_seg(agent)}"
