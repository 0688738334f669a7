"""``agentledger why`` and ``agentledger impact`` against a real server: the causal DAG as a
tree a person can follow (ids, edge kinds, events reached twice, missing causes, cut points),
the API's own bounds by default, and ``--json`` as the API answered (``docs/pages/client.md``,
the ``agentledger why``/``impact`` item)."""

from __future__ import annotations

import re
import uuid
from typing import Any

import httpx
import orjson
import pytest
from typer.testing import CliRunner

from _runs import LOOKUP_RESULT, NOT_CAUSES_OF_ANSWER, VERIFY_RESULT, WHY_ANSWER, log_two_tool_run
from agentledger.cli import app
from agentledger.client import Ledger
from agentledger.protocol import limits


@pytest.fixture
def run_ids(ledger_server: Any, agent_name: str) -> dict[str, str]:
    with Ledger(ledger_server.url, ledger_server.api_key, agent_name, spill_dir=None) as ledger:
        return log_two_tool_run(ledger, f"s-{agent_name}")


@pytest.fixture
def args(ledger_server: Any) -> list[str]:
    return ["--url", ledger_server.url, "--api-key", ledger_server.api_key]


def run(*argv: str) -> Any:
    result = CliRunner().invoke(app, list(argv))
    assert result.exit_code == 0, result.output
    return result


def line_of(out: str, event_id: str) -> str:
    """The tree line that shows ``event_id`` in full (not the title, not a ``↑ see``)."""
    found = [x for x in out.splitlines()[1:] if event_id in x and "↑ see" not in x]
    assert len(found) == 1, (event_id, out)
    return found[0]


def test_why_prints_every_cause_once_with_its_id_and_edge_kind(
    run_ids: dict[str, str], args: list[str]
) -> None:
    """README: Command line (why prints the tree of causes back to the root causes)."""
    out = run("why", run_ids["answer"], *args).stdout
    lines = out.splitlines()
    assert lines[0].startswith(f"why {run_ids['answer']}: {len(WHY_ANSWER)} event(s)")
    assert "complete" in lines[0] and "incomplete" not in lines[0]
    assert lines[1].startswith(f"{run_ids['answer']} assistant_response")  # the asked event first
    for role in WHY_ANSWER:
        line_of(out, run_ids[role])  # each cause printed in full exactly once
    for role in NOT_CAUSES_OF_ANSWER:
        assert run_ids[role] not in out  # the steps it ran inside are not causes
    # Both tool results are shown as read by the second model call, under it.
    llm2 = line_of(out, run_ids["llm2"])
    for role, text in (("result_a", LOOKUP_RESULT), ("result_b", VERIFY_RESULT)):
        line = line_of(out, run_ids[role])
        assert re.search(rf"\[read\] {run_ids[role]} tool_result .*{text}", line), line
        assert line.index("[read]") > llm2.index("[closes]")  # indented deeper
    assert f"[produced] {run_ids['llm2_end']} llm_end" in out
    assert f"[requested] {run_ids['llm1_end']} llm_end" in out
    # The llm_end that requested both tools is reached twice: printed once, then referred to.
    assert out.count(f"[requested] ↑ see {run_ids['llm1_end']}") == 1
    assert "↑ see <id>: reached again along another path" in out


def test_impact_prints_what_a_tool_result_fed(run_ids: dict[str, str], args: list[str]) -> None:
    """README: Command line (impact prints the tree of effects)."""
    out = run("impact", run_ids["result_a"], *args).stdout
    lines = out.splitlines()
    assert lines[0].startswith(f"impact of {run_ids['result_a']}: 3 event(s)")
    assert lines[1].startswith(f"{run_ids['result_a']} tool_result lookup_order")
    assert f"└─ [read] {run_ids['llm2']} llm_start" in lines[2]
    assert f"[closes] {run_ids['llm2_end']} llm_end" in lines[3]
    assert f"[produced] {run_ids['answer']} assistant_response" in lines[4]
    whole = run("impact", run_ids["user"], *args).stdout
    ids = set(re.findall(r"[0-9a-f]{8}-[0-9a-f-]{27}", whole))
    assert ids == set(run_ids.values())  # the user's message caused the whole run


def test_bounds_cut_and_say_where_and_how_to_go_further(
    run_ids: dict[str, str], args: list[str]
) -> None:
    out = run("why", run_ids["answer"], "--depth", "3", *args).stdout
    assert "incomplete: 2 event(s) not followed further" in out.splitlines()[0]
    for role in ("result_a", "result_b"):
        line = line_of(out, run_ids[role])
        following = out.splitlines()[out.splitlines().index(line) + 1]
        assert following.strip().endswith("… not followed further (bound reached)")
    assert run_ids["call_a"] not in out
    assert "ask again with a higher --depth or --limit" in out
    small = run("impact", run_ids["user"], "--limit", "2", *args).stdout
    assert "incomplete" in small.splitlines()[0] and "… not followed further" in small


def test_a_cause_that_is_not_stored_is_shown_and_explained(
    ledger_server: Any, agent_name: str, args: list[str]
) -> None:
    ghost = str(uuid.uuid4())
    with Ledger(ledger_server.url, ledger_server.api_key, agent_name, spill_dir=None) as ledger:
        seen = ledger.log("llm_start", {"model": "m"}, parent_id=ghost)
        assert ledger.flush(10).complete
    out = run("why", seen.event_id, *args).stdout
    assert "incomplete: 1 cause(s) not stored" in out.splitlines()[0]
    assert f"└─ [cause] ✗ {ghost} (not stored)" in out
    assert "✗ <id> (not stored): a cause the event names that the ledger does not hold" in out


def test_defaults_are_the_apis_and_deep_chains_are_followed(
    ledger_server: Any, agent_name: str, args: list[str]
) -> None:
    """The old CLI stopped at 100 ancestors; the API's default goes 1,000 deep."""
    from agentledger.cli._lineage_commands import impact, why

    assert _default(why, "depth") == limits.WHY_DEPTH_DEFAULT
    assert _default(impact, "depth") == limits.IMPACT_DEPTH_DEFAULT
    assert _default(why, "limit") == _default(impact, "limit") == limits.LINEAGE_LIMIT_DEFAULT
    with Ledger(ledger_server.url, ledger_server.api_key, agent_name, spill_dir=None) as ledger:
        refs = [ledger.log("user_message", {"text": "start"})]
        for i in range(150):
            refs.append(ledger.log("custom_event", {"step": i}, parent_id=refs[-1]))
        assert ledger.flush(20).complete
    out = run("why", refs[-1].event_id, *args).stdout
    assert "151 event(s)" in out.splitlines()[0] and "complete" in out.splitlines()[0]
    assert f"{refs[0].event_id} user_message" in out
    assert "(depth 150) [cause]" in out  # deep lines stay readable: indentation is capped
    assert max(len(x) for x in out.splitlines()) < 200


def _default(command: Any, name: str) -> Any:
    import inspect

    return inspect.signature(command).parameters[name].default


def test_lines_are_not_cut_off_a_terminal(run_ids: dict[str, str], args: list[str]) -> None:
    out = run("why", run_ids["answer"], *args).stdout
    line = line_of(out, run_ids["result_b"])
    assert len(line) > 80 and line.endswith(VERIFY_RESULT)


def test_json_is_the_api_answer(
    run_ids: dict[str, str], args: list[str], ledger_server: Any
) -> None:
    for command in ("why", "impact"):
        body = orjson.loads(run(command, run_ids["llm2"], "--json", *args).stdout)
        api = httpx.get(
            f"{ledger_server.url}/v1/events/{run_ids['llm2']}/{command}",
            headers=ledger_server.headers(),
        ).json()
        assert body == api
    why = orjson.loads(run("why", run_ids["llm2"], "--json", "--depth", "1", *args).stdout)
    assert why["cut_at"] and why["chain_complete"] is False


def test_an_unknown_event_is_one_error_line(args: list[str]) -> None:
    for command in ("why", "impact"):
        for as_json in ([], ["--json"]):
            missing = str(uuid.uuid4())
            result = CliRunner().invoke(app, [command, missing, *args, *as_json])
            assert result.exit_code == 1
            assert result.output == f"error: no event {missing}\n"


def test_on_a_terminal_lines_fit_its_width_and_keep_their_ids(
    run_ids: dict[str, str], ledger_server: Any, agent_name: str
) -> None:
    import io

    from rich.console import Console

    from agentledger.timeline import print_lineage

    with Ledger(ledger_server.url, ledger_server.api_key, agent_name, spill_dir=None) as ledger:
        result = ledger.why(run_ids["answer"])
    out = io.StringIO()
    terminal = Console(file=out, force_terminal=True, width=90, color_system=None)
    print_lineage(terminal, result)
    lines = out.getvalue().splitlines()
    tree = [x for x in lines[1:] if x.lstrip("│├└─ ").startswith("[")]
    assert len(tree) == len(WHY_ANSWER)  # every edge line: nine causes and the one "↑ see"
    assert all(len(x) <= 90 for x in lines[1 : len(WHY_ANSWER) + 1])
    for role in WHY_ANSWER:
        assert run_ids[role] in out.getvalue()
