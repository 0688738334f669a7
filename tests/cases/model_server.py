"""A small real OpenAI-compatible model server for the replay tests (stdlib HTTP, a thread).

``POST /v1/chat/completions`` plays a refund agent whose behaviour follows the system prompt,
so a prompt change changes what the candidate does:

* a prompt with ``verify`` looks the order up, verifies the charge, then answers;
* without it, the model skips the verification;
* ``terse`` makes the final answer stop at the token limit (``finish_reason: "length"``);
* ``chatty`` makes the final answer talk about something else entirely;
* ``refuse`` makes it decline;
* a user turn asking when the refund will ``arrive`` checks ``refund_status`` and answers
  that (the tool calls of earlier turns in the history do not count for this turn);
* offered no tools (a plain chatbot), it answers at once.

``POST /v1/responses`` plays the same agent over the Responses API (input items in, output
items out; the cut answer is ``status: "incomplete"`` at ``max_output_tokens``).

``POST /v1/embeddings`` returns bag-of-words vectors (word hashes), so similar wording scores
high and different wording low. ``calls`` counts the chat requests served.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ANSWER = "I refunded the duplicate charge of 49.90 for order A1234 (refund re_1234)."
CUT = "I refunded the duplicate charge of"
#: the answer to the follow-up turn ("... when will it arrive?")
ARRIVAL = "The refund re_1234 reaches your card within five business days."
REFUSAL = "I'm sorry, but I can't help with refunds. Please contact support."
CHATTY = "Our store opens at nine on weekdays, and the cafe upstairs has lovely pastries!"
DIMENSIONS = 64


@dataclass
class ModelServer:
    """The running server: its ``/v1`` base URL and how many chat calls it answered."""

    base_url: str
    calls: list[dict[str, Any]] = field(default_factory=list)
    #: the request paths of the model calls, in order (``/v1/chat/completions``, ``/v1/responses``)
    paths: list[str] = field(default_factory=list)


def _words_vector(text: str) -> list[float]:
    vector = [0.0] * DIMENSIONS
    for word in text.lower().split():
        word = word.strip(".,!?()")
        if word:
            vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % DIMENSIONS] += 1.0
    return vector


def _reply(body: dict[str, Any]) -> dict[str, Any]:
    messages = body.get("messages") or []
    system = " ".join(
        str(m.get("content") or "") for m in messages if m.get("role") in ("system", "developer")
    ).lower()
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    turn = messages[users[-1] :] if users else messages  # what this turn did so far
    asked = str(turn[0].get("content") or "").lower() if users else ""
    done = [m.get("name") or "" for m in messages if m.get("role") == "tool"]
    called = [
        c["function"]["name"]
        for m in turn
        if m.get("role") == "assistant"
        for c in m.get("tool_calls") or []
    ]
    plan = ["lookup_order", "verify_charge"] if "verify" in system else ["lookup_order"]
    if "arrive" in asked:  # the follow-up turn: the refund was made earlier in the conversation
        plan = ["refund_status"]
    if not body.get("tools"):  # a plain chatbot: no tools offered, it answers at once
        plan = []
    pending = [tool for tool in plan if tool not in called]
    message: dict[str, Any] = {"role": "assistant", "content": ""}
    finish = "stop"
    if pending:
        tool = pending[0]
        message["tool_calls"] = [
            {
                "id": f"call_{tool}_{len(done)}",
                "type": "function",
                "function": {"name": tool, "arguments": json.dumps({"order_id": "A1234"})},
            }
        ]
        finish = "tool_calls"
    elif "terse" in system:
        message["content"], finish = CUT, "length"
    elif "chatty" in system:
        message["content"] = CHATTY
    elif "refuse" in system:
        message["content"] = REFUSAL
    elif "arrive" in asked:
        message["content"] = ARRIVAL
    else:
        message["content"] = ANSWER
    return {
        "id": f"chatcmpl-{len(messages)}",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": str(body.get("model") or "m") + "-served",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
    }


def _as_chat(body: dict[str, Any]) -> dict[str, Any]:
    """A Responses request as the chat request ``_reply`` reads."""
    items = body.get("input")
    messages: list[dict[str, Any]] = []
    if body.get("instructions"):
        messages.append({"role": "system", "content": body["instructions"]})
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    for item in items or []:
        kind = item.get("type")
        if kind == "function_call":
            call = {"id": item["call_id"], "function": {"name": item["name"]}}
            messages.append({"role": "assistant", "tool_calls": [call]})
        elif kind == "function_call_output":
            messages.append({"role": "tool", "tool_call_id": item["call_id"]})
        elif item.get("role"):
            content = item.get("content")
            if isinstance(content, list):
                content = " ".join(str(part.get("text") or "") for part in content)
            messages.append({"role": item["role"], "content": content})
    return {"messages": messages, "tools": body.get("tools"), "model": body.get("model")}


def _response(body: dict[str, Any]) -> dict[str, Any]:
    chat = _reply(_as_chat(body))
    (choice,) = chat["choices"]
    message = choice["message"]
    output: list[dict[str, Any]] = []
    for call in message.get("tool_calls") or []:
        function = call["function"]
        output.append(
            {
                "type": "function_call",
                "id": "fc_" + call["id"],
                "call_id": call["id"],
                "name": function["name"],
                "arguments": function["arguments"],
                "status": "completed",
            }
        )
    if message["content"]:
        text = {"type": "output_text", "text": message["content"], "annotations": []}
        output.append(
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [text],
            }
        )
    cut = choice["finish_reason"] == "length"
    return {
        "id": "resp_" + chat["id"],
        "object": "response",
        "created_at": 1_700_000_000,
        "model": chat["model"],
        "status": "incomplete" if cut else "completed",
        "incomplete_details": {"reason": "max_output_tokens"} if cut else None,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": body.get("tools") or [],
        "usage": {
            "input_tokens": 100,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 20,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 120,
        },
    }


@contextmanager
def serve() -> Iterator[ModelServer]:
    """Start the server on a free loopback port; stop it afterwards."""
    state = ModelServer("")

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if self.path.endswith("/chat/completions"):
                state.calls.append(body)
                state.paths.append(self.path)
                answer = _reply(body)
            elif self.path.endswith("/responses"):
                state.calls.append(body)
                state.paths.append(self.path)
                answer = _response(body)
            elif self.path.endswith("/embeddings"):
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                answer = {
                    "object": "list",
                    "data": [
                        {"object": "embedding", "index": i, "embedding": _words_vector(t)}
                        for i, t in enumerate(texts)
                    ],
                    "model": body.get("model"),
                }
            else:
                self.send_error(404)
                return
            payload = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
