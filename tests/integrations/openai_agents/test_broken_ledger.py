"""A ledger whose server is down or never answers neither breaks nor slows an agent run: the
processor only calls the client's non-blocking ``log()``, and the client buffers."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import agents
import pytest
from agents import Runner

from _servers import free_port
from agentledger.client import Ledger
from agentledger.integrations.openai_agents import LedgerTracingProcessor

from .test_runs import support_agent

pytestmark = pytest.mark.openai_agents


@pytest.fixture
def silent_url() -> Iterator[str]:
    """A loopback server that takes connections and never answers."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(64)
        yield f"http://127.0.0.1:{server.getsockname()[1]}"


def timed_run() -> float:
    agent, config, _ = support_agent()
    started = time.perf_counter()
    result = Runner.run_sync(agent, "where is order 42?", run_config=config)
    assert result.final_output == "Order 42 has shipped."
    return time.perf_counter() - started


@pytest.mark.parametrize("server", ["down", "silent"])
def test_a_broken_server_neither_breaks_nor_slows_the_run(
    server: str, silent_url: str, agent_name: str
) -> None:
    agents.set_trace_processors([])
    timed_run()  # warm the SDK's imports and caches
    baseline = min(timed_run() for _ in range(3))
    url = f"http://127.0.0.1:{free_port()}" if server == "down" else silent_url
    ledger = Ledger(url=url, api_key="k", agent=agent_name, spill_dir=None, timeout=30.0)
    agents.set_trace_processors([LedgerTracingProcessor(ledger)])
    try:
        with_ledger = min(timed_run() for _ in range(3))
    finally:
        agents.set_trace_processors([])
        ledger.close(timeout_s=0.1)
    # the server never answers within the run: anything waiting on it would take 30 s
    assert with_ledger < baseline + 0.5, (baseline, with_ledger)
