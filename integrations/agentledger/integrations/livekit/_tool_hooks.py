"""Callbacks of tool execution: ``tool_call`` when LiveKit starts a call, and its
``tool_result`` / ``tool_error`` once both its end and its batch's outputs are known.
"""

from __future__ import annotations

from typing import Any

from agentledger.integrations.livekit._core import ObserverCore, event_at
from agentledger.integrations.livekit._state import Call, Speech
from agentledger.integrations.livekit._values import args_object, ms
from agentledger.protocol import vocabulary as v

__all__ = ["ToolHooks"]


class ToolHooks(ObserverCore):
    """Callbacks of tool calls and tool batches."""

    # -- tools -------------------------------------------------------------------------------

    def _on_tool_update(self, ev: Any) -> None:
        update = getattr(ev, "update", None)
        kind = getattr(update, "type", None)
        at = event_at(ev)
        if kind == "tool_call_started":
            self._tool_started(getattr(update, "function_call", None), at)
        elif kind == "tool_call_ended":
            call_id = getattr(update, "call_id", None) or ""
            call = self._calls.get(call_id)
            if call is None or call.status is not None:
                return
            call.status = getattr(update, "status", None) or "done"
            call.message = getattr(update, "message", None)
            call.ended_at = at
            if call.batch_done:
                self._log_outcome(call_id, call, None)
        elif kind == "tool_call_updated" and self._rank >= 2:
            call = self._calls.get(getattr(update, "call_id", None) or "")
            data = {
                "call_id": getattr(update, "call_id", None),
                "message": getattr(update, "message", None),
                "silent": getattr(update, "silent", None),
            }
            self._log("livekit.tool_update", data, call.event_id if call else None, at)

    def _tool_started(self, fnc_call: Any, at: float | None) -> Call | None:
        call_id = getattr(fnc_call, "call_id", None)
        if fnc_call is None or not call_id:
            return None
        if call_id in self._calls or call_id in self._ended_calls:
            return self._calls.get(call_id)
        speech = self._owner(getattr(fnc_call, "id", None))
        now = at or 0.0
        start = self._open_request(speech, speech.boundary if speech else now)
        name = getattr(fnc_call, "name", "")
        args = args_object(getattr(fnc_call, "arguments", None))
        data: dict[str, Any] = {"tool": name, "args": args, "call_id": call_id}
        if getattr(fnc_call, "group_id", None):
            data["group_id"] = fnc_call.group_id
        if speech is not None:
            data["speech_id"] = speech.speech_id
            speech.open_calls.append({"tool": name, "args": args, "call_id": call_id})
        requester = self._requester(speech, start)
        event_id = self._log(
            v.TOOL_CALL,
            data,
            requester,
            at,
            causes=[(requester, v.EDGE_REQUESTED)],
            scope=self._agent_step,
        )
        call = Call(event_id, name, now, speech.speech_id if speech else None)
        self._calls[call_id] = call
        return call

    def _log_outcome(self, call_id: str, call: Call, output: Any) -> str:
        """Write ``tool_result`` / ``tool_error`` of an ended call (child of its ``tool_call``).

        Args:
            output: the batch's ``FunctionCallOutput`` (what the model was given), or ``None``.
        """
        self._calls.pop(call_id, None)
        given = getattr(output, "output", None) if output is not None else None
        data: dict[str, Any] = {"tool": call.tool, "call_id": call_id}
        if call.ended_at is not None and call.started_at:
            data["duration_ms"] = ms(call.ended_at - call.started_at)
        if call.status == "done":
            # The model-facing output (a handoff tool's ``(Agent, "text")`` becomes "text").
            data.update(result=given if output is not None else call.message, status="done")
            event = v.TOOL_RESULT
        else:
            # LiveKit reports the exception's text, not its class, so ``type`` is unknown
            # (None) for a raising tool; "cancelled" for a cancelled call (e.g. a barge-in),
            # "unfinished" for a call still running when the session closed.
            error = call.message if call.message is not None else call.status
            data.update(error=error, type=None if call.status == "error" else call.status)
            data["status"] = call.status
            if given is not None and given != error:
                data["model_output"] = given
            event = v.TOOL_ERROR
        outcome = self._log(event, data, call.event_id, call.ended_at)
        self._ended_calls[call_id] = outcome
        self._last_outcome = outcome
        speech = self._speeches.get(call.speech_id or "")
        if speech is not None:
            speech.last_outcome = speech.last_step = outcome
            speech.inputs.append(outcome)
            if call.ended_at is not None:
                speech.boundary = max(speech.boundary, call.ended_at)
        return outcome

    def _flush_calls(self, speech_id: str | None, *, closing: bool = False) -> None:
        """Write the outcomes of ended calls of a finished speech (all speeches if ``None``)."""
        for call_id, call in list(self._calls.items()):
            if speech_id is not None and call.speech_id != speech_id:
                continue
            call.batch_done = True
            if call.status is None and closing:
                call.status, call.message = "unfinished", "session closed while the tool ran"
            if call.status is not None:
                self._log_outcome(call_id, call, None)

    def _on_tools_executed(self, ev: Any) -> None:
        at = event_at(ev)
        speech: Speech | None = None
        self._last_outcome = None
        for fnc_call, output in zip(
            getattr(ev, "function_calls", None) or (),
            getattr(ev, "function_call_outputs", None) or (),
            strict=False,
        ):
            call_id = getattr(fnc_call, "call_id", None) or ""
            speech = speech or self._owner(getattr(fnc_call, "id", None))
            call = self._calls.get(call_id)
            if call is None and call_id not in self._ended_calls:
                # LiveKit never started it (arguments failed to parse): log call + outcome.
                call = self._tool_started(fnc_call, at)
                if call is not None:
                    call.status = "error" if getattr(output, "is_error", False) else "done"
                    call.message, call.ended_at = getattr(output, "output", None), at
            if call is None:
                continue
            call.batch_done = True
            if call.status is not None:
                self._log_outcome(call_id, call, output)
        if getattr(ev, "has_agent_handoff", False):
            self._handoff_cause = self._last_outcome
        if speech is not None:
            self._flush_end(speech, text=None)
            if at is not None:
                speech.boundary = max(speech.boundary, at)
