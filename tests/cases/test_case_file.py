"""The case file: schema, short forms, and bad files as exit code 2 naming the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentledger import cases
from agentledger.cases import Case, CaseError, load_case, save_case

from .conftest import EXAMPLE, cli

pytestmark = pytest.mark.langchain

MINIMAL: dict[str, Any] = {
    "case_id": "refund-1",
    "inputs": ["I was charged twice for A1234"],
    "expect": {
        "must_call": ["lookup_order", {"tool": "issue_refund", "args": {"amount": 49.9}}],
        "must_not_call": ["delete_account"],
        "max_tool_calls": 6,
    },
}


def write(tmp_path: Path, document: Any, name: str = "case.json") -> Path:
    path = tmp_path / "cases" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    return path


def run(path: Path) -> Any:
    return cli(
        "cases",
        "run",
        path,
        "--factory",
        "refund_agent:build_agent",
        "--tools",
        "refund_tools:TOOLS",
    )


def test_short_forms_are_read_and_written_in_full(tmp_path: Path) -> None:
    case = load_case(write(tmp_path, MINIMAL))
    assert case.expect.must_call[0].tool == "lookup_order"
    assert case.expect.must_call[1].args == {"amount": 49.9}
    assert case.expect.must_not_call is not None
    assert case.expect.must_not_call.tools == ["delete_account"]
    assert case.expect.max_tool_calls is not None and case.expect.max_tool_calls.value == 6
    again = load_case(save_case(case, tmp_path / "out.json"))
    assert again == case
    assert json.loads((tmp_path / "out.json").read_text())["schema_version"] == cases.SCHEMA_VERSION


def test_a_version_1_file_loads_without_lineage_and_keeps_its_version(tmp_path: Path) -> None:
    old = load_case(write(tmp_path, {**MINIMAL, "schema_version": 1}))
    assert old.schema_version == 1 and old.lineage is None
    again = json.loads(save_case(old, tmp_path / "again.json").read_text())
    assert again["schema_version"] == 1 and "lineage" not in again


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda d: d["expect"]["must_call"].append({"tol": "x"}), "expect.must_call.2.tool"),
        (lambda d: d.update(inputs=[]), "inputs"),
        (lambda d: d.update(case_id="no spaces allowed"), "case_id"),
        (lambda d: d.update(schema_version=4), "schema_version"),
        (lambda d: d.update(schema_version=2, turn_answers=["a"]), "turn_answers"),
        (lambda d: d.update(turn_answers=["a", "b"]), "turn_answers"),
        (lambda d: d.update(history=[{"role": "user"}], schema_version=2), "history"),
        (lambda d: d.update(tool_stubs={"t": [{"order": 0, "turn": 1}]}), "tool_stubs"),
        (lambda d: d.update(schema_version=1, lineage={"steps": []}), "lineage"),
        (lambda d: d.update(lineage={"steps": [{"step": -1}]}), "lineage.steps.0.step"),
        (
            lambda d: d["expect"].update(outcome=[{"contains": "a", "regex": "b"}]),
            "expect.outcome.0",
        ),
        (lambda d: d["expect"].update(outcome=[{"regex": "("}]), "expect.outcome.0"),
        (lambda d: d["expect"].update(max_tool_calls=-1), "expect.max_tool_calls.value"),
        (lambda d: d["expect"].update(min_pass_rate=1.5), "expect.min_pass_rate"),
        (lambda d: d.update(surprise=True), "surprise"),
    ],
)
def test_bad_case_file_exits_2_naming_the_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: Any, field: str
) -> None:
    document = json.loads(json.dumps(MINIMAL))
    change(document)
    path = write(tmp_path, document)
    with pytest.raises(CaseError) as caught:
        load_case(path)
    assert caught.value.field == field
    monkeypatch.chdir(EXAMPLE)
    result = run(path.parent)
    assert result.exit_code == 2, result.output
    assert f"field '{field}'" in result.output and str(path) in result.output.replace("\n", "")


@pytest.mark.parametrize(
    ("document", "message"),
    [("{not json", "not valid JSON"), ("[1, 2]", "a case is a JSON object")],
)
def test_unreadable_case_file_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, document: str, message: str
) -> None:
    monkeypatch.chdir(EXAMPLE)
    result = run(write(tmp_path, document).parent)
    assert result.exit_code == 2 and message in result.output


def test_bad_specs_baseline_and_missing_dir_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(EXAMPLE)
    path = write(tmp_path, MINIMAL)
    for agent, tools, needle in [
        ("refund_agent", "refund_tools:TOOLS", "module:attribute"),
        ("no_such_module_xyz:f", "refund_tools:TOOLS", "no_such_module_xyz"),
        ("refund_agent:build_agent", "refund_tools:MISSING", "MISSING"),
    ]:
        result = cli("cases", "run", path, "--factory", agent, "--tools", tools)
        assert result.exit_code == 2 and needle in result.output, result.output
    baseline = tmp_path / "old.json"
    baseline.write_text("{}")
    result = cli(
        "cases",
        "run",
        path,
        "--factory",
        "refund_agent:build_agent",
        "--tools",
        "refund_tools:TOOLS",
        "--baseline",
        baseline,
    )
    assert result.exit_code == 2 and "field 'cases'" in result.output
    result = run(tmp_path / "nothing-here")
    assert result.exit_code == 2 and "no such case file or directory" in result.output
    duplicate = write(tmp_path, MINIMAL, "copy.json")
    result = run(duplicate.parent)
    assert result.exit_code == 2 and "duplicate" in result.output


def test_schema_command_prints_the_json_schema() -> None:
    result = cli("cases", "schema")
    assert result.exit_code == 0
    schema = json.loads(result.stdout)
    assert schema["title"].startswith("agentledger regression case")
    assert {"case_id", "inputs", "tool_stubs", "expect", "chain_head", "lineage"} <= set(
        schema["properties"]
    )
    assert schema["title"] == f"agentledger regression case v{cases.SCHEMA_VERSION}"
    assert schema == cases.case_json_schema() and Case.model_json_schema()["required"]


def test_public_surface_is_complete() -> None:
    for name in cases.__all__:
        assert getattr(cases, name) is not None, name
    from agentledger.integrations import pytest_plugin

    assert pytest_plugin.check is cases.check and pytest_plugin.StubRegistry is cases.StubRegistry
    for name in cases.__all__:  # the plugin module (old and new path) hands out the same objects
        assert getattr(pytest_plugin, name) is getattr(cases, name), name
    with pytest.raises(AttributeError):
        _ = pytest_plugin.pytest_plugins  # pytest probes it; it must not resolve to anything


def test_harness_errors_are_ledger_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentledger.protocol import LedgerError

    for error in (
        cases.CaseError,
        cases.SpecError,
        cases.ChainBrokenError,
        cases.EmbeddedServerError,
    ):
        assert issubclass(error, LedgerError), error
    monkeypatch.delenv("AGENTLEDGER_API_KEY", raising=False)
    with (
        pytest.raises(cases.SpecError, match="--api-key"),
        cases.ledger_target("http://127.0.0.1:9"),
    ):
        pass


def test_agent_is_an_agent_name_and_the_factory_has_its_own_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """README: Command line (``--agent`` always names an agent; ``cases run`` takes the
    candidate with ``--factory``, and the old ``--agent module:factory`` still works with a
    warning)."""
    monkeypatch.chdir(EXAMPLE)
    path = write(tmp_path, MINIMAL)
    missing = cli("cases", "run", path, "--tools", "refund_tools:TOOLS")
    assert missing.exit_code == 2 and "no candidate: pass --factory module:attribute" in (
        missing.output
    )
    old = cli(
        "cases", "run", path, "--agent", "refund_agent:build_agent", "--tools", "refund_tools:NO"
    )
    assert old.exit_code == 2
    assert old.output.startswith(
        "warning: --agent module:attribute is deprecated: pass the factory with --factory "
        "(--agent names the agent the runs are logged under)\n"
    )
    assert "--tools: 'refund_tools' has no attribute 'NO'" in old.output  # factory taken
