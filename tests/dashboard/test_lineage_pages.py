"""The why and impact pages: the causal DAG of a run logged with causes, drawn as an SVG graph
(causes above effects, edges labelled with their kind, the asked event highlighted, missing
causes and cut points marked), over plain HTTP on both stores and in headless Chromium
(``docs/pages/dashboard.md``, the Why and Impact item)."""

from __future__ import annotations

import re
import uuid
from typing import Any

import httpx
import pytest

from _runs import (
    LOOKUP_RESULT,
    NOT_CAUSES_OF_ANSWER,
    VERIFY_RESULT,
    WHY_ANSWER,
    log_two_tool_run,
)
from agentledger.client import Ledger
from agentledger.protocol import limits

from .conftest import ARTIFACTS

pytestmark = pytest.mark.server

NODE = re.compile(r'<g class="node([^"]*)" data-id="([0-9a-f-]{36})"')
EDGE = re.compile(
    r'<g class="edge[^"]*" data-effect="([^"]+)" data-cause="([^"]+)" data-kind="([^"]+)"'
)


def logged_run(server: Any, agent: str) -> dict[str, str]:
    with Ledger(server.url, server.api_key, agent, spill_dir=None) as ledger:
        return log_two_tool_run(ledger, f"run-{uuid.uuid4().hex[:8]}")


def page_of(server: Any, path: str) -> str:
    response = httpx.get(server.url + path, cookies=server.ui_cookies(), timeout=30.0)
    assert response.status_code == 200, response.text[:500]
    return response.text


def api(server: Any, event_id: str, what: str, **params: Any) -> Any:
    return httpx.get(
        f"{server.url}/v1/events/{event_id}/{what}", params=params, headers=server.headers()
    ).json()


def drawn(page: str) -> tuple[dict[str, str], set[tuple[str, str, str]]]:
    """``({event_id: node classes}, {(effect, cause, kind)})`` of the page's graph."""
    return {m.group(2): m.group(1) for m in NODE.finditer(page)}, set(EDGE.findall(page))


def test_why_page_draws_the_causes_of_an_answer(store_server: Any, agent_name: str) -> None:
    ids = logged_run(store_server, agent_name)
    page = page_of(store_server, f"/ui/events/{ids['answer']}/why")
    nodes, edges = drawn(page)
    assert set(nodes) == {ids[r] for r in WHY_ANSWER}
    assert not {ids[r] for r in NOT_CAUSES_OF_ANSWER} & set(nodes)
    wire = api(store_server, ids["answer"], "why")
    assert edges == {(e["effect"], e["cause"], e["kind"]) for e in wire["edges"]}
    assert (ids["llm2"], ids["result_a"], "read") in edges
    assert (ids["llm2"], ids["result_b"], "read") in edges
    assert "asked" in nodes[ids["answer"]] and "root" in nodes[ids["user"]]
    assert LOOKUP_RESULT in page and VERIFY_RESULT in page
    for event_id in nodes:  # every node links to its event, why and impact pages
        for suffix in ("", "/why", "/impact"):
            assert f'href="/ui/events/{event_id}{suffix}"' in page
    # The bounds are the API's defaults, shown in the form that asks again.
    depth = f'max="{limits.LINEAGE_DEPTH_MAX}" value="{limits.WHY_DEPTH_DEFAULT}"'
    limit = f'max="{limits.LINEAGE_LIMIT_MAX}" value="{limits.LINEAGE_LIMIT_DEFAULT}"'
    assert f'name="depth" min="0" {depth}' in page
    assert f'name="limit" min="1" {limit}' in page
    assert 'id="cut"' not in page and 'id="missing"' not in page


def test_impact_page_draws_what_a_tool_result_fed(store_server: Any, agent_name: str) -> None:
    ids = logged_run(store_server, agent_name)
    page = page_of(store_server, f"/ui/events/{ids['result_a']}/impact")
    nodes, edges = drawn(page)
    assert set(nodes) == {ids[r] for r in ("result_a", "llm2", "llm2_end", "answer")}
    assert "asked" in nodes[ids["result_a"]]
    assert edges == {
        (ids["llm2"], ids["result_a"], "read"),
        (ids["llm2_end"], ids["llm2"], "closes"),
        (ids["answer"], ids["llm2_end"], "produced"),
    }
    assert f'value="{limits.IMPACT_DEPTH_DEFAULT}"' in page


def test_cut_points_and_missing_causes_are_marked(store_server: Any, agent_name: str) -> None:
    ids = logged_run(store_server, agent_name)
    page = page_of(store_server, f"/ui/events/{ids['answer']}/why?depth=3")
    nodes, _ = drawn(page)
    assert {n for n, cls in nodes.items() if " cut" in cls} == {ids["result_a"], ids["result_b"]}
    assert 'id="cut"' in page and "follow further" in page
    assert "causes not followed" in page
    assert ids["call_a"] not in nodes

    ghost = str(uuid.uuid4())
    with Ledger(store_server.url, store_server.api_key, agent_name, spill_dir=None) as ledger:
        orphan = ledger.log("llm_start", {"model": "m"}, parent_id=ghost).event_id
        assert ledger.flush(10).complete
    page = page_of(store_server, f"/ui/events/{orphan}/why")
    nodes, edges = drawn(page)
    assert "missing" in nodes[ghost] and (orphan, ghost, "cause") in edges
    assert 'id="missing"' in page and ghost in page.split('id="missing"', 1)[1]


def test_bad_bounds_are_refused(store_server: Any, agent_name: str) -> None:
    ids = logged_run(store_server, agent_name)
    for query in (f"depth={limits.LINEAGE_DEPTH_MAX + 1}", "limit=0"):
        response = httpx.get(
            f"{store_server.url}/ui/events/{ids['answer']}/why?{query}",
            cookies=store_server.ui_cookies(),
        )
        assert response.status_code == 422


def test_the_graph_shows_the_tool_results_that_fed_the_answer(
    page: Any, ledger_server: Any, agent_name: str
) -> None:
    """In Chromium: the tool results are drawn, above the model call that read them, which
    is above the answer; their links lead to their own why and impact graphs."""
    ids = logged_run(ledger_server, agent_name)
    page.goto(f"{ledger_server.url}/ui/events/{ids['answer']}/why")

    def node(role: str) -> Any:
        found = page.locator(f"#graph g.node[data-id='{ids[role]}']")
        assert found.is_visible(), role
        return found

    result_a, result_b = node("result_a"), node("result_b")
    assert "tool_result · lookup_order" in result_a.text_content()
    assert LOOKUP_RESULT in result_a.text_content()
    assert VERIFY_RESULT in result_b.text_content()
    read = page.locator(
        f"#graph g.edge[data-cause='{ids['result_a']}'][data-effect='{ids['llm2']}']"
    )
    assert (
        read.get_attribute("data-kind") == "read"
        and read.locator("text.elabel").text_content() == "read"
    )

    def top(role: str) -> float:
        return float(node(role).bounding_box()["y"])

    assert top("user") < top("llm1") < top("call_a") < top("result_a") < top("llm2")
    assert top("result_b") < top("llm2") < top("answer")
    assert page.locator("#graph g.node.asked").get_attribute("data-id") == ids["answer"]
    page.screenshot(path=str(ARTIFACTS / "07-why-graph.png"), full_page=True)

    result_a.locator("a.to-impact").click()
    page.wait_for_url(re.compile(f"/ui/events/{ids['result_a']}/impact$"))
    assert page.locator(f"#graph g.node[data-id='{ids['answer']}']").is_visible()
    assert page.locator("#graph g.node.asked").get_attribute("data-id") == ids["result_a"]
    page.screenshot(path=str(ARTIFACTS / "08-impact-graph.png"), full_page=True)

    page.locator(f"#graph g.node[data-id='{ids['llm2']}'] a.to-why").click()
    page.wait_for_url(re.compile(f"/ui/events/{ids['llm2']}/why$"))
    assert page.locator("#graph g.node").count() == len(WHY_ANSWER) - 2


def test_a_large_answer_draws_the_events_nearest_the_asked_one(
    store_server: Any, agent_name: str
) -> None:
    from agentledger.server._ui._graph import GRAPH_NODES

    with Ledger(store_server.url, store_server.api_key, agent_name, spill_dir=None) as ledger:
        chain = [ledger.log("user_message", {"text": "start"}).event_id]
        for i in range(GRAPH_NODES + 99):
            chain.append(ledger.log("custom_event", {"i": i}, parent_id=chain[-1]).event_id)
        assert ledger.flush(30).complete
    page = page_of(store_server, f"/ui/events/{chain[-1]}/why")
    nodes, _ = drawn(page)
    assert set(nodes) == set(chain[-GRAPH_NODES:])  # the nearest causes, the root left out
    assert "trimmed" in nodes[chain[-GRAPH_NODES]]
    assert f"The answer holds 100 more event(s) than the {GRAPH_NODES} drawn" in page
