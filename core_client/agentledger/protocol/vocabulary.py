"""The one event vocabulary every integration emits.

The names and their data fields are described in ``docs/pages/event-vocabulary.md``. A
regression check such as "must call ``verify_charge`` before ``issue_refund``" reads
the same whether a session came from LangChain, LangGraph, CrewAI, LiveKit or a hand-written
agent, because every integration maps its framework's hooks onto these names.

=====================  ==========================================  =========================
event                  data (required -> optional)                 parent
=====================  ==========================================  =========================
``session_start``      framework, agent config version             none
``session_end``        stats                                       ``session_start``
``user_message``       ``text`` -> ``role``, ``item_id``           session start / last turn
``llm_start``          ``model``, ``messages`` -> provider, tools  the calling step
``llm_end``            ``text``, ``token_usage`` -> tool_calls,    its ``llm_start``
                       finish_reason, ttft_ms, duration_ms
``llm_error``          ``error``, ``type``                         its ``llm_start``
``tool_call``          ``tool``, ``args`` (object) -> ``call_id``  the requesting step
``tool_result``        ``tool``, ``result`` -> call_id,            its ``tool_call``
                       duration_ms, status
``tool_error``         ``tool``, ``error``, ``type`` -> call_id    its ``tool_call``
``retrieval``          ``query``, ``documents``                    the asking step
``step_start``         ``name``, ``kind`` -> inputs                enclosing step
``step_end``           ``name``, ``kind`` -> outputs               its ``step_start``
``step_error``         ``name``, ``kind``, ``error``               its ``step_start``
``interrupted``        ``reason`` (not an error)                   its step
``assistant_response`` ``text`` -> ``interrupted``                 the producing step
``state_set``          ``key``, ``value``                          any
``state_delete``       ``key``                                     any
``custom_event``       ``name``, ``data`` (a framework's own          the enclosing run
                       custom event, e.g. LangChain's
                       ``dispatch_custom_event``)
=====================  ==========================================  =========================

``custom_event`` is ours: the vocabulary doc has no row for user-defined events, and dropping
them would lose what the agent's author chose to record.

Token usage (``data.token_usage``): ``input_tokens`` *includes* ``cache_read_tokens`` and
``cache_write_tokens``; ``added_input_tokens = input_tokens - cache_read_tokens``. Unknown
usage is ``None``, never 0.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "ASSISTANT_RESPONSE",
    "CLOSING_EVENTS",
    "CUSTOM_EVENT",
    "EDGE_CAUSE",
    "EDGE_CLOSES",
    "EDGE_CONTEXT",
    "EDGE_DELEGATED",
    "EDGE_HANDOFF",
    "EDGE_KINDS",
    "EDGE_PRODUCED",
    "EDGE_READ",
    "EDGE_REQUESTED",
    "ERROR_EVENTS",
    "EVENT_TYPES",
    "INTERRUPTED",
    "LLM_END",
    "LLM_ERROR",
    "LLM_START",
    "RETRIEVAL",
    "SESSION_END",
    "SESSION_START",
    "STATE_DELETE",
    "STATE_SET",
    "STEP_END",
    "STEP_ERROR",
    "STEP_KINDS",
    "STEP_START",
    "TOKEN_USAGE_KEYS",
    "TOOL_CALL",
    "TOOL_ERROR",
    "TOOL_RESULT",
    "USER_MESSAGE",
]

SESSION_START: Final = "session_start"
SESSION_END: Final = "session_end"
USER_MESSAGE: Final = "user_message"
LLM_START: Final = "llm_start"
LLM_END: Final = "llm_end"
LLM_ERROR: Final = "llm_error"
TOOL_CALL: Final = "tool_call"
TOOL_RESULT: Final = "tool_result"
TOOL_ERROR: Final = "tool_error"
RETRIEVAL: Final = "retrieval"
STEP_START: Final = "step_start"
STEP_END: Final = "step_end"
STEP_ERROR: Final = "step_error"
INTERRUPTED: Final = "interrupted"
ASSISTANT_RESPONSE: Final = "assistant_response"
STATE_SET: Final = "state_set"
STATE_DELETE: Final = "state_delete"
CUSTOM_EVENT: Final = "custom_event"

#: Every event type of the vocabulary, in table order.
EVENT_TYPES: Final[tuple[str, ...]] = (
    SESSION_START,
    SESSION_END,
    USER_MESSAGE,
    LLM_START,
    LLM_END,
    LLM_ERROR,
    TOOL_CALL,
    TOOL_RESULT,
    TOOL_ERROR,
    RETRIEVAL,
    STEP_START,
    STEP_END,
    STEP_ERROR,
    INTERRUPTED,
    ASSISTANT_RESPONSE,
    STATE_SET,
    STATE_DELETE,
    CUSTOM_EVENT,
)

#: Events that close a start event and are always its children.
CLOSING_EVENTS: Final[frozenset[str]] = frozenset(
    {SESSION_END, LLM_END, LLM_ERROR, TOOL_RESULT, TOOL_ERROR, STEP_END, STEP_ERROR}
)

#: Events that mean something failed (used by drift error rates and the dashboard).
ERROR_EVENTS: Final[frozenset[str]] = frozenset({LLM_ERROR, TOOL_ERROR, STEP_ERROR})

#: ``step_start.data.kind`` values.
STEP_KINDS: Final[tuple[str, ...]] = (
    "chain",
    "graph",
    "graph_node",
    "task",
    "agent",
    "crew",
    "flow",
    "flow_method",
    "memory",
    "knowledge",
    "mcp",
    "a2a",
    "guardrail",
    "reasoning",
    "evaluation",
)

#: Keys of ``data.token_usage``.
TOKEN_USAGE_KEYS: Final[tuple[str, ...]] = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "model",
)

# -- causal edge kinds ----------------------------------------------------------------------
# An event names its causes: ``parent_id`` (the primary cause) and ``caused_by`` (further
# causes, each optionally labelled with one of these kinds). ``why()`` and ``impact()`` follow
# every cause edge; ``scope_id`` (the step an event ran inside) is not a cause.

#: A closing event (``*_end``, ``*_result``, ``*_error``) -> the start event it closes. The
#: server labels a parent edge so when the event type is in :data:`CLOSING_EVENTS`.
EDGE_CLOSES: Final = "closes"
#: A ``tool_call`` -> the model output (``llm_end``) that asked for it.
EDGE_REQUESTED: Final = "requested"
#: A model call (``llm_start``) -> an input its prompt held: the user's message, a tool
#: result, retrieved documents, an earlier answer.
EDGE_READ: Final = "read"
#: An answer or output (``assistant_response``) -> the model call that produced it.
EDGE_PRODUCED: Final = "produced"
#: A step (a task, a node) -> an earlier step's output it was given as context.
EDGE_CONTEXT: Final = "context"
#: Work done by another agent -> the delegation that asked for it.
EDGE_DELEGATED: Final = "delegated"
#: The first step of an agent that took over -> the event that handed off to it.
EDGE_HANDOFF: Final = "handoff"
#: A cause of no more specific kind (the default for an unlabelled ``parent_id`` or
#: ``caused_by`` entry).
EDGE_CAUSE: Final = "cause"

#: The edge kinds the integrations write, in the order above. The server accepts any kind
#: matching ``limits.EDGE_KIND_PATTERN``, so a newer client's kind is not refused.
EDGE_KINDS: Final[tuple[str, ...]] = (
    EDGE_CLOSES,
    EDGE_REQUESTED,
    EDGE_READ,
    EDGE_PRODUCED,
    EDGE_CONTEXT,
    EDGE_DELEGATED,
    EDGE_HANDOFF,
    EDGE_CAUSE,
)
