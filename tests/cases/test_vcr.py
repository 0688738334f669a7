"""vcrpy: HTTP-backed tools recorded once against a live server, replayed with it stopped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from agentledger.cases import (
    StubRegistry,
    export_cases,
    ledger_target,
    load_case,
    load_cases,
    record_cassette,
    run_suite,
    save_case,
)
from agentledger.client import Ledger

from .conftest import payments_service, production

pytestmark = pytest.mark.langchain

vcr = pytest.importorskip("vcr", reason="needs pip install vcrpy")

HTTP_TOOLS = ["lookup_order", "verify_charge", "issue_refund"]


def test_cassette_recorded_live_then_replayed_with_the_server_stopped(
    ledger_server: Any, agent_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from refund_agent import build_agent  # type: ignore[import-not-found]
    from refund_tools import TOOLS  # type: ignore[import-not-found]

    with payments_service.serve() as live:
        monkeypatch.setenv("PAYMENTS_URL", live)
        session = production.run_production_session(
            ledger_server.url, ledger_server.api_key, agent_name, live
        )
        with Ledger(ledger_server.url, ledger_server.api_key, agent_name, spill_dir=None) as led:
            (path,) = export_cases(led, agent=agent_name, sessions=[session], out=tmp_path).files
        record_cassette(load_case(path), path, TOOLS, HTTP_TOOLS)
    with pytest.raises(httpx.TransportError):  # the live system is gone
        httpx.get(f"{live}/orders/A1234", timeout=2)

    case = load_case(path)
    assert case.cassette is not None and case.cassette.tools == HTTP_TOOLS
    cassette = path.parent / case.cassette.path
    recorded = cassette.read_text()
    assert "/orders/A1234/charges/check" in recorded and "/refunds" in recorded
    for personal in ("Dana", "Reyes", "dana.reyes@example.org", "4242 4242"):
        assert personal not in recorded, personal
    # Prove the answers come from the cassette, not the stubs: spoil the stubs.
    for stubs in case.tool_stubs.values():
        for stub in stubs:
            stub.result = "STUB"
    save_case(case, path)

    with ledger_target() as target:
        report = run_suite(
            load_cases(tmp_path), factory=build_agent, tools=TOOLS, target=target, runs=1
        )
        events = target.ledger.replay(report.cases[0].runs[0].extra["session_id"])
    assert report.gate_passed, report.cases[0].failure_message()
    results = [e.data["result"] for e in events if e.event == "tool_result"]
    assert len(results) == 3 and "STUB" not in results
    # The recording itself refunded once more on the live system (re_0002): the replay
    # serves exactly what was recorded.
    assert results[2]["refund_id"] == "re_0002"  # the tool's dict, stored as an object

    registry = StubRegistry(case, path.parent)
    with registry.cassette(), pytest.raises(vcr.errors.CannotOverwriteExistingCassetteException):
        httpx.get(f"{live}/orders/Z9999", timeout=2)  # not recorded: never goes live
