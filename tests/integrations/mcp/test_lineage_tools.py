"""The ``why`` and ``impact`` MCP tools over a run logged with causes: a real MCP client, the
console script and a real ledger. The answer is the API's DAG (events with ids, edges with
kinds), with the API's default bounds, and its text is the tree the CLI prints.

README, "MCP: ask the ledger from your editor or another agent": the rows of ``why`` and
``impact`` in the tools table.
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from _runs import NOT_CAUSES_OF_ANSWER, WHY_ANSWER, log_two_tool_run
from _servers import ServerProcess
from agentledger.client import Ledger
from agentledger.protocol import limits

from .conftest import McpFactory, text_of

pytestmark = pytest.mark.mcp


@pytest.fixture
def run_ids(ledger_server: ServerProcess, agent_name: str) -> dict[str, str]:
    with Ledger(ledger_server.url, ledger_server.api_key, agent_name, spill_dir=None) as ledger:
        return log_two_tool_run(ledger, f"s-{uuid.uuid4().hex[:8]}")


def api(server: ServerProcess, event_id: str, what: str, **params: Any) -> Any:
    response = httpx.get(
        f"{server.url}/v1/events/{event_id}/{what}", params=params, headers=server.headers()
    )
    response.raise_for_status()
    return response.json()


async def test_why_returns_the_dag_the_api_returns(
    mcp_client: McpFactory, ledger_server: ServerProcess, agent_name: str, run_ids: dict[str, str]
) -> None:
    async with mcp_client(
        url=ledger_server.url, api_key=ledger_server.api_key, agent=agent_name
    ) as client:
        why = await client.call_tool("why", {"event_id": run_ids["answer"]})
        cut = await client.call_tool("why", {"event_id": run_ids["answer"], "depth": 3})
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert not why.is_error, text_of(why)
    found = why.structured_content
    wire = api(ledger_server, run_ids["answer"], "why")
    assert found["edges"] == wire["edges"]
    assert [e["event_id"] for e in found["chain"]] == [e["event_id"] for e in wire["chain"]]
    assert {e["event_id"] for e in found["chain"]} == {run_ids[r] for r in WHY_ANSWER}
    assert not {run_ids[r] for r in NOT_CAUSES_OF_ANSWER} & {e["event_id"] for e in found["chain"]}
    by_id = {e["event_id"]: e for e in found["chain"]}
    llm2 = by_id[run_ids["llm2"]]
    assert llm2["scope_id"] == run_ids["node2"]
    assert {c["event_id"] for c in llm2["caused_by"]} == {run_ids["result_a"], run_ids["result_b"]}
    reads = {(e["effect"], e["cause"]) for e in found["edges"] if e["kind"] == "read"}
    assert (run_ids["llm2"], run_ids["result_a"]) in reads
    assert (run_ids["llm2"], run_ids["result_b"]) in reads
    assert found["roots"] == [run_ids["user"]] and found["chain_complete"] is True

    text = text_of(why)
    assert f"[read] {run_ids['result_a']} tool_result lookup_order" in text
    assert f"[read] {run_ids['result_b']} tool_result verify_charge" in text
    assert f"[requested] ↑ see {run_ids['llm1_end']}" in text

    assert cut.structured_content["cut_at"] == sorted([run_ids["result_a"], run_ids["result_b"]])
    assert "… not followed further" in text_of(cut) and "higher depth or limit" in text_of(cut)

    for name in ("why", "impact"):
        properties = tools[name].input_schema["properties"]
        assert properties["depth"]["default"] == limits.WHY_DEPTH_DEFAULT
        assert properties["limit"]["default"] == limits.LINEAGE_LIMIT_DEFAULT
        assert properties["depth"]["maximum"] == limits.LINEAGE_DEPTH_MAX


async def test_impact_of_a_tool_result_reaches_the_answer(
    mcp_client: McpFactory, ledger_server: ServerProcess, agent_name: str, run_ids: dict[str, str]
) -> None:
    async with mcp_client(
        url=ledger_server.url, api_key=ledger_server.api_key, agent=agent_name
    ) as client:
        impact = await client.call_tool("impact", {"event_id": run_ids["result_a"]})
        everything = await client.call_tool("impact", {"event_id": run_ids["user"]})
    found = impact.structured_content
    assert [e["event_id"] for e in found["events"]] == [
        run_ids["llm2"],
        run_ids["llm2_end"],
        run_ids["answer"],
    ]
    assert found["edges"] == api(ledger_server, run_ids["result_a"], "impact")["edges"]
    assert {"effect": run_ids["llm2"], "cause": run_ids["result_a"], "kind": "read"} in found[
        "edges"
    ]
    lines = text_of(impact).splitlines()
    assert lines[1].startswith(f"{run_ids['result_a']} tool_result lookup_order")
    assert lines[2] == lines[2].split("[read]")[0] + f"[read] {run_ids['llm2']} llm_start scripted"
    assert f"[produced] {run_ids['answer']} assistant_response" in lines[4]
    every = {e["event_id"] for e in everything.structured_content["events"]}
    assert every == set(run_ids.values()) - {run_ids["user"]}
