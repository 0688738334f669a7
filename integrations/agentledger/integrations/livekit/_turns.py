"""Callbacks of the conversation: user and assistant messages, handoffs, transcripts,
speeches and the model-request metrics LiveKit reports for them.
"""

from __future__ import annotations

from typing import Any

from agentledger.client import capture_internal_exceptions
from agentledger.integrations.livekit._core import (
    current_agent,
    dump,
    event_at,
    str_or_none,
)
from agentledger.integrations.livekit._state import Speech
from agentledger.integrations.livekit._tool_hooks import ToolHooks
from agentledger.integrations.livekit._values import message_latency, text_of
from agentledger.protocol import vocabulary as v

__all__ = ["TurnHooks"]


class TurnHooks(ToolHooks):
    """Callbacks of conversation items, transcripts, speeches and model-request metrics."""

    # -- conversation items ------------------------------------------------------------------

    def _on_item_added(self, ev: Any) -> None:
        # Events are stamped with the time the item was added (``ev.created_at``), not the
        # item's own ``created_at`` (for a reply: when speaking started, before its llm_end).
        item = getattr(ev, "item", None)
        at = event_at(ev)
        kind = getattr(item, "type", None)
        if kind == "agent_handoff":
            if self._rank >= 1:
                self._on_handoff(item, at)
            return
        if kind != "message":
            return
        role = getattr(item, "role", None)
        if role == "user":
            self._on_user_message(item, at)
        elif role == "assistant":
            self._on_assistant_message(item, at)

    def _on_user_message(self, item: Any, at: float | None) -> None:
        text = text_of(item)
        data: dict[str, Any] = {"text": text, "role": "user", "item_id": getattr(item, "id", None)}
        meta, self._transcript_meta = self._transcript_meta, {}
        if meta and (not meta.get("text") or meta["text"] in text):
            for key in ("language", "speaker_id"):
                if meta.get(key) is not None:
                    data[key] = meta[key]
        if getattr(item, "interrupted", False):
            data["interrupted"] = True
        confidence = getattr(item, "transcript_confidence", None)
        if confidence is not None:
            data["transcript_confidence"] = confidence
        latency = message_latency(getattr(item, "metrics", None))
        if latency:
            data["latency"] = latency
        # The conversation goes on from the last reply the user heard (a root cause of the
        # turn otherwise): why() of a later answer reaches the earlier turns it follows.
        parent = self._last_response or self._session_start
        event_id = self._log(v.USER_MESSAGE, data, parent, at)
        self._pending_user = self._last_user = event_id
        self._pending_user_at = at or 0.0

    def _on_assistant_message(self, item: Any, at: float | None) -> None:
        item_id = getattr(item, "id", None)
        text = text_of(item)
        interrupted = bool(getattr(item, "interrupted", False))
        speech = self._owner(item_id) if self._rank >= 1 else None
        produced: str | None = None
        if speech is not None:
            # A cut-off reply's text is what was spoken, not what the model produced.
            produced = self._flush_end(speech, text=None if interrupted else text)
            parent = speech.last_step or speech.open_start or self._anchor(speech)
            produced = produced or (speech.last_step if speech.last_step == parent else None)
        else:
            parent = self._last_user or self._agent_step or self._session_start
        data: dict[str, Any] = {"text": text, "interrupted": interrupted, "item_id": item_id}
        if speech is not None:
            data["speech_id"] = speech.speech_id
        metrics = getattr(item, "metrics", None)
        latency = message_latency(metrics)
        if latency:
            data["latency"] = latency
        if self._rank >= 2 and metrics:
            data["metrics"] = dict(metrics)
        response = self._log(
            v.ASSISTANT_RESPONSE,
            data,
            parent,
            at,
            causes=[(produced, v.EDGE_PRODUCED)] if produced == parent else [],
            scope=self._agent_step,
        )
        self._last_response = response
        if speech is not None:
            speech.last_step = response
        if interrupted and self._rank >= 1:
            self._log_interrupted(speech, response, at)

    def _on_handoff(self, item: Any, at: float | None) -> None:
        old, new = getattr(item, "old_agent_id", None), getattr(item, "new_agent_id", None)
        if self._agent_step is not None:
            self._log(
                v.STEP_END,
                {"name": self._agent_name, "kind": "agent", "outputs": {"handoff_to": new}},
                self._agent_step,
                at,
            )
        # The tool whose result handed off (function_tools_executed.has_agent_handoff), else
        # (the application switched agents) the last reply of the conversation.
        cause, self._handoff_cause = self._handoff_cause, None
        if cause is None and old is not None:
            cause = self._last_response
        data: dict[str, Any] = {"name": new, "kind": "agent", "inputs": {"handoff_from": old}}
        instructions = getattr(current_agent(self._session), "instructions", None)
        if isinstance(instructions, str):
            data["inputs"]["instructions"] = instructions
        self._agent_step = self._log(
            v.STEP_START,
            data,
            cause or self._session_start,
            at,
            causes=[(cause, v.EDGE_HANDOFF)] if cause is not None and old is not None else [],
        )
        self._agent_name = new
        self._handed_off = old is not None

    def _on_transcribed(self, ev: Any) -> None:
        text = getattr(ev, "transcript", "")
        if getattr(ev, "is_final", False):
            self._transcript_meta = {
                "text": text.strip(),
                "language": str_or_none(getattr(ev, "language", None)),
                "speaker_id": getattr(ev, "speaker_id", None),
            }
        elif self._rank >= 2:
            data = {
                "text": text,
                "item_id": getattr(ev, "item_id", None),
                "language": str_or_none(getattr(ev, "language", None)),
                "speaker_id": getattr(ev, "speaker_id", None),
            }
            self._log("livekit.transcript_partial", data, self._session_start, event_at(ev))

    # -- speeches and model requests ---------------------------------------------------------

    def _on_speech_created(self, ev: Any) -> None:
        handle = getattr(ev, "speech_handle", None)
        speech_id = getattr(handle, "id", None)
        if handle is None or not speech_id:
            return
        at = event_at(ev) or 0.0
        self._speeches[speech_id] = Speech(
            speech_id=speech_id, handle=handle, created_at=at, boundary=at
        )
        self._last_speech = speech_id
        handle.add_done_callback(self._speech_done_cb)

    def _speech_done_cb(self, *args: Any, **kwargs: Any) -> None:
        with capture_internal_exceptions("livekit.speech_done"):
            handle = args[0] if args else None
            speech = self._speeches.pop(getattr(handle, "id", ""), None)
            if speech is None:
                return
            self._flush_calls(speech.speech_id)
            self._flush_end(speech, text=None, final=True)
            if (
                self._rank >= 1
                and getattr(handle, "interrupted", False)
                and not speech.interrupted_logged
            ):
                self._log_interrupted(speech, speech.last_step or speech.anchor)

    def _on_metrics(self, ev: Any) -> None:
        metrics = getattr(ev, "metrics", None)
        if getattr(metrics, "type", None) == "llm_metrics":
            self._on_llm_metrics(metrics)
        if self._rank >= 2 and metrics is not None:
            speech = self._speeches.get(getattr(metrics, "speech_id", None) or "")
            parent = speech.anchor if speech is not None else None
            self._log("livekit.metrics", dump(metrics), parent or self._session_start, event_at(ev))

    def _on_llm_metrics(self, metrics: Any) -> None:
        speech = self._speech(getattr(metrics, "speech_id", None))
        end_at = float(getattr(metrics, "timestamp", 0.0) or 0.0)
        duration = getattr(metrics, "duration", None)
        started = end_at - duration if isinstance(duration, int | float) else end_at
        if speech is None:
            # A request outside any speech (e.g. a user's own llm.chat()): log it whole.
            start = self._open_request(None, started, metrics)
            orphan = Speech(speech_id="", open_start=start, pending=metrics)
            self._flush_end(orphan, text=None)
            return
        if speech.pending is not None:
            self._flush_end(speech, text=None)
        self._open_request(speech, started, metrics)
        speech.pending = metrics

    def _on_usage(self, ev: Any) -> None:
        self._usage = getattr(ev, "usage", None)
