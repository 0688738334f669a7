"""The decision-time view inside an evidence bundle (README, "Evidence bundles";
docs/pages/evidence.md, "What is in it"): ``decision.json`` names the model call behind the
event, the exact messages it got and the tool result it read; it is listed in the signed
manifest, and the verifier reports a view that cites a record the segments do not hold, even
when the manifest is re-signed with the server's own key."""

from __future__ import annotations

import base64
import hashlib
import uuid
from pathlib import Path

import httpx
import orjson

from _bundles import active_key, bundle_of, files_of, rezip
from _servers import ServerFactory, ServerProcess
from agentledger.evidence import verify_bundle
from agentledger.protocol.signed_heads import manifest_payload
from agentledger.server._signing._keyring import Keyring


def _agent_run(server: ServerProcess, agent: str) -> dict[str, str]:
    """user message -> model call -> tool call -> tool result -> model call (reads it) ->
    answer, as an integration writes them; the ids by name."""
    ids = {name: str(uuid.uuid4()) for name in ("user", "llm1", "end1", "call", "result",
                                               "llm2", "end2", "answer")}  # fmt: skip
    messages = [{"role": "human", "content": "refund order 7?"},
                {"role": "tool", "content": "order 7: paid", "tool_call_id": "c1"}]  # fmt: skip
    events = [
        {"event_id": ids["user"], "event": "user_message", "data": {"text": "refund order 7?"}},
        {"event_id": ids["llm1"], "event": "llm_start", "parent_id": ids["user"],
         "data": {"model": "m", "messages": messages[:1]}},
        {"event_id": ids["end1"], "event": "llm_end", "parent_id": ids["llm1"],
         "data": {"text": "", "tool_calls": [{"id": "c1", "name": "lookup"}]}},
        {"event_id": ids["call"], "event": "tool_call", "parent_id": ids["end1"],
         "data": {"tool": "lookup", "call_id": "c1"}},
        {"event_id": ids["result"], "event": "tool_result", "parent_id": ids["call"],
         "data": {"tool": "lookup", "output": "order 7: paid"}},
        {"event_id": ids["llm2"], "event": "llm_start", "parent_id": ids["result"],
         "data": {"model": "m", "messages": messages}},
        {"event_id": ids["end2"], "event": "llm_end", "parent_id": ids["llm2"],
         "data": {"text": "Refunded."}},
        {"event_id": ids["answer"], "event": "assistant_response", "parent_id": ids["end2"],
         "data": {"text": "Refunded."}},
    ]  # fmt: skip
    for event in events:
        event |= {"agent": agent, "session_id": "s-1"}
    answer = httpx.post(f"{server.url}/v1/events/batch", json={"events": events},
                        headers=server.headers(), timeout=30)  # fmt: skip
    assert answer.status_code == 200 and answer.json()["failed"] == 0, answer.text
    return ids


def test_bundle_carries_the_decision_view_and_checks_what_it_cites(
    server_factory: ServerFactory, tmp_path: Path
) -> None:
    keys_file = tmp_path / "keys.json"
    server = server_factory(env={"AGENTLEDGER_SIGNING_KEYS": str(keys_file)})
    ids = _agent_run(server, f"dec-{uuid.uuid4().hex[:6]}")
    bundle = bundle_of(server, ids["answer"])
    key = active_key(server)
    assert verify_bundle(bundle, public_key=key).ok

    files = files_of(bundle)
    manifest = orjson.loads(files["manifest.json"])
    assert "decision.json" in manifest["files"]
    decision = orjson.loads(files["decision.json"])
    assert decision["event_id"] == ids["answer"]
    assert decision["model_call"]["event_id"] == ids["llm2"]
    assert decision["model_call"]["messages"][-1]["content"] == "order 7: paid"
    assert [r["event_id"] for r in decision["tool_results"]] == [ids["result"]]

    # the key holder's own software writes a view citing a record the bundle does not hold
    stranger = str(uuid.uuid4())
    decision["model_call"]["event_id"] = stranger
    files["decision.json"] = orjson.dumps(decision)
    manifest["files"]["decision.json"] = hashlib.sha256(files["decision.json"]).hexdigest()
    manifest.pop("signature")
    manifest["key_id"], manifest["signature"] = Keyring(keys_file).sign(manifest_payload(manifest))
    files["manifest.json"] = orjson.dumps(manifest)
    report = verify_bundle(rezip(files), public_key=key)
    assert [(p.kind, p.event_id) for p in report.problems] == [("decision", stranger)]
    assert base64.b64decode(manifest["signature"])  # really re-signed, not dropped
