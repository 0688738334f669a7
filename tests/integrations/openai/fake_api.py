"""A small OpenAI-compatible HTTP server for the tests: real HTTP on a loopback port.

The test queues the replies (:meth:`FakeOpenAI.reply`, :meth:`FakeOpenAI.stream`,
:meth:`FakeOpenAI.fail`); each ``POST /v1/chat/completions`` or ``POST /v1/responses`` takes
the next one queued for its path, and every request body is kept in :attr:`FakeOpenAI.requests`
so a test can check that the capture sent exactly what the app asked for. Builders below
produce the JSON the real API returns.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CHAT = "/v1/chat/completions"
RESPONSES = "/v1/responses"


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    #: SSE events (JSON values); ``done`` adds the ``[DONE]`` line chat streams end with
    events: list[Any] | None = None
    done: bool = True


@dataclass
class FakeOpenAI:
    """The server's state: queued replies per path and the requests received."""

    queues: dict[str, deque[Reply]] = field(default_factory=dict)
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    url: str = ""

    def reply(self, path: str, body: Any, status: int = 200) -> None:
        self.queues.setdefault(path, deque()).append(Reply(status, body))

    def stream(self, path: str, events: list[Any], *, done: bool = True) -> None:
        self.queues.setdefault(path, deque()).append(Reply(events=events, done=done))

    def fail(self, path: str, status: int, message: str) -> None:
        error = {"error": {"message": message, "type": "invalid_request_error", "code": None}}
        self.reply(path, error, status)

    def bodies(self, path: str) -> list[dict[str, Any]]:
        return [body for p, body in self.requests if p == path]


def _handler(state: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            state.requests.append((self.path, body))
            queue = state.queues.get(self.path)
            if not queue:
                self._json(404, {"error": {"message": f"nothing queued for {self.path}"}})
                return
            reply = queue.popleft()
            if reply.events is None:
                self._json(reply.status, reply.body)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            try:
                for event in reply.events:
                    self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                    self.wfile.flush()
                if reply.done:
                    self.wfile.write(b"data: [DONE]\n\n")
                    self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):  # the client closed early
                pass
            self.close_connection = True

        def _json(self, status: int, body: Any) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


class FakeServer:
    """Runs :class:`FakeOpenAI` on ``127.0.0.1`` (a free port) in a thread."""

    def __init__(self) -> None:
        self.state = FakeOpenAI()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self.state))
        self._server.daemon_threads = True
        self.state.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self.state

    def __exit__(self, *exc_info: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


# ----------------------------------------------------------------- chat completions


def chat_usage(prompt: int = 12, completion: int = 5, cached: int = 4) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached},
        "completion_tokens_details": {"reasoning_tokens": 2},
    }


def tool_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def completion(
    text: str | None = None,
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    finish_reason: str | None = None,
    model: str = "gpt-test-2025",
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_calls:
        message["tool_calls"] = tool_calls
    reason = finish_reason or ("tool_calls" if tool_calls else "stop")
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": reason, "logprobs": None}],
        "usage": usage if usage is not None else chat_usage(),
    }


def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-2",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "gpt-test-2025",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }


def text_chunks(*pieces: str, usage: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """A streamed chat answer: the role, the pieces, the finish; a usage chunk if given."""
    events = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": piece}) for piece in pieces]
    events.append(chunk({}, "stop"))
    if usage is not None:
        events.append({**chunk({}), "choices": [], "usage": usage})
    return events


def tool_chunks(call_id: str, name: str, *argument_parts: str) -> list[dict[str, Any]]:
    """A streamed tool call, its arguments in parts."""
    head = {"index": 0, "id": call_id, "type": "function", "function": {"name": name}}
    events = [chunk({"role": "assistant", "tool_calls": [head]})]
    events += [
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": part}}]})
        for part in argument_parts
    ]
    events.append(chunk({}, "tool_calls"))
    return events


# ----------------------------------------------------------------- responses


def responses_usage() -> dict[str, Any]:
    return {
        "input_tokens": 20,
        "input_tokens_details": {"cached_tokens": 8},
        "output_tokens": 7,
        "output_tokens_details": {"reasoning_tokens": 3},
        "total_tokens": 27,
    }


def message_item(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def function_item(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": "completed",
    }


def response(
    output: list[dict[str, Any]],
    *,
    status: str = "completed",
    incomplete: str | None = None,
    model: str = "gpt-test-2025",
) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1_700_000_000,
        "model": model,
        "status": status,
        "incomplete_details": {"reason": incomplete} if incomplete else None,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": responses_usage(),
    }


def response_events(text_parts: list[str], final: dict[str, Any]) -> list[dict[str, Any]]:
    """A streamed response as the API sends it: created, the message item and its text part
    added, the text deltas, the part and item done, completed (no ``[DONE]`` line)."""
    created = {**final, "status": "in_progress", "output": [], "usage": None}
    empty = {**message_item(""), "status": "in_progress", "content": []}
    part = {"type": "output_text", "text": "", "annotations": []}
    text = "".join(text_parts)
    where = {"item_id": "msg_1", "output_index": 0, "content_index": 0}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": created},
        {"type": "response.output_item.added", "output_index": 0, "item": empty},
        {"type": "response.content_part.added", **where, "part": part},
    ]
    events += [
        {"type": "response.output_text.delta", **where, "delta": piece, "logprobs": []}
        for piece in text_parts
    ]
    events += [
        {"type": "response.output_text.done", **where, "text": text, "logprobs": []},
        {"type": "response.content_part.done", **where, "part": {**part, "text": text}},
        {"type": "response.output_item.done", "output_index": 0, "item": message_item(text)},
    ]
    kind = "response.completed" if final["status"] == "completed" else "response.incomplete"
    events.append({"type": kind, "response": final})
    return [{**event, "sequence_number": n} for n, event in enumerate(events)]
