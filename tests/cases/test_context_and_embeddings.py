"""A case's ``context`` reaches a factory that asks for it; ``similar_to`` uses a real
OpenAI-compatible embeddings endpoint (a small local HTTP server)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from agentledger.cases import (
    Case,
    http_embedder,
    ledger_target,
    run_suite,
    save_case,
)
from agentledger.testing import ScriptedChatModel

pytestmark = pytest.mark.langchain

WORDS = ("refund", "duplicate", "charge", "weather")


class _Embeddings(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        assert self.path == "/v1/embeddings" and body["model"] == "bag-of-words"
        data = [
            {"index": i, "embedding": [float(text.lower().count(w)) for w in WORDS]}
            for i, text in enumerate(body["input"])
        ]
        raw = json.dumps({"data": data}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


@pytest.fixture
def embeddings_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Embeddings)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_context_is_given_and_similar_to_is_checked(embeddings_url: str, tmp_path: Path) -> None:
    case = Case.model_validate(
        {
            "case_id": "policy",
            "inputs": ["Can I get my duplicate charge back?"],
            "context": [
                {
                    "query": "refund policy",
                    "documents": [
                        {"id": "kb-7", "text": "Duplicate charges are refunded within 5 days."}
                    ],
                }
            ],
            "expect": {
                "outcome": [
                    {"similar_to": "We refund the duplicate charge.", "threshold": 0.8},
                    {"similar_to": "Sunny weather today.", "threshold": 0.8, "min_pass_rate": 0.0},
                ]
            },
        }
    )
    path = save_case(case, tmp_path / "policy.json")
    seen: list[Any] = []

    def factory(tools: list[Any], context: list[dict[str, Any]]) -> Any:
        seen.append(context)
        text = context[0]["documents"][0]["text"]
        return ScriptedChatModel(replies=[f"Yes: {text} refund charge"])

    class Wrap:  # a runnable taking {"messages": [...]}, as create_agent graphs do
        def __init__(self, model: Any) -> None:
            self.model = model

        def invoke(self, state: dict[str, Any], config: Any = None) -> dict[str, Any]:
            from langchain_core.runnables import RunnableLambda

            def step(s: dict[str, Any]) -> dict[str, Any]:
                return {"messages": [*s["messages"], self.model.invoke(s["messages"])]}

            return RunnableLambda(step, name="agent").invoke(state, config)

    embed = http_embedder(embeddings_url, "bag-of-words")
    assert embed is not None and http_embedder(None) is None
    with ledger_target() as target:
        report = run_suite(
            [(path, case)],
            factory=lambda t, context: Wrap(factory(t, context)),
            tools=[],
            target=target,
            embed=embed,
        )
    assert seen and seen[0][0]["documents"][0]["id"] == "kb-7"
    checks = report.cases[0].checks
    assert checks["outcome[0]:similar_to"].pass_rate == 1.0
    assert checks["outcome[1]:similar_to"].pass_rate == 0.0  # measured, and allowed to fail
    assert "similarity" in checks["outcome[0]:similar_to"].actual
    assert report.gate_passed
