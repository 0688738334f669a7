"""The benchmarks still run (``--quick`` sizes): they share the embedded server helper and the
public APIs, so a change elsewhere must not leave them broken until someone measures again.

Only that they run and print their tables is checked, among them every table a script prints
for the docs (``doc_table("name", ...)`` in its source, parsed back as ``run_all.py
--update-docs`` parses it); numbers are measured at full size by ``run_all.py --update-docs``,
never asserted here (timed assertions would flake on a shared machine).
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
_SPEC = importlib.util.spec_from_file_location("_bench_doc_tables", BENCHMARKS / "doc_tables.py")
assert _SPEC is not None and _SPEC.loader is not None
doc_tables = sys.modules["_bench_doc_tables"] = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(doc_tables)
DOC_TABLE_CALL = re.compile(r'doc_table\(\s*"([\w-]+)"')


@pytest.mark.parametrize(
    ("script", "row"),
    [
        ("bench_server.py", "why() depth 1,000 over HTTP"),
        ("bench_ingest.py", "canonical JSON of a LangChain-shaped record"),
        ("bench_query.py", "keyword search p50"),
        ("bench_cases.py", "check() on 1,000 events"),
        ("bench_replay.py", "20 sessions, model latency 150 ms/call"),
        ("bench_mcp_proxy.py", "proxy, server down"),
        ("bench_redaction.py", "redact(), every pattern"),
        ("bench_client.py", "100,000 events, server down (closed port)"),
        ("bench_agents_adapters.py", "OpenAI Agents SDK"),
        ("bench_retention.py", "SQLite: sweep erasure rate"),
        ("bench_otlp.py", "OTLP protobuf, `POST /v1/traces`"),
        ("bench_signing.py", "HeadSigner.sign + publish to a directory"),
        ("bench_evidence.py", "`verify_bundle`, 200 records"),
        ("bench_langchain.py", "LangChain handler, LCEL async, server on the same machine"),
        ("bench_decision.py", "decision(answer) over HTTP"),
        ("bench_verify.py", "tried: compare the columns in SQL"),
        pytest.param(
            "bench_dashboard.py",
            "dashboard session page",
            marks=pytest.mark.skipif(
                not Path("/usr/bin/chromium").exists(), reason="needs /usr/bin/chromium"
            ),
        ),
        pytest.param(
            "bench_lineage.py",
            "SQLite: why(answer), 1,000-event causal DAG",
            marks=pytest.mark.skipif(
                not os.environ.get("AGENTLEDGER_TEST_POSTGRES_DSN"),
                reason="measures PostgreSQL too: needs AGENTLEDGER_TEST_POSTGRES_DSN",
            ),
        ),
    ],
)
def test_benchmark_runs_quick(script: str, row: str) -> None:
    result = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), "--quick"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "ZIZKADB_TELEMETRY": "false", "ZIZKADB_QUIET": "1"},
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    assert row in result.stdout, result.stdout[-2000:]
    printed = {name for name, table in doc_tables.printed_tables(result.stdout) if table.rows}
    for name in DOC_TABLE_CALL.findall((BENCHMARKS / script).read_text()):
        assert name in printed, (name, result.stdout[-2000:])


def test_lineage_benchmark_measures_sqlite_alone_without_postgres() -> None:
    """Benchmarks page, first paragraph: with no PostgreSQL answering, ``bench_lineage.py``
    still measures its SQLite rows and says PostgreSQL was skipped."""
    closed = "postgresql://postgres@127.0.0.1:1/none"  # port 1: nothing listens there
    result = subprocess.run(
        [sys.executable, str(BENCHMARKS / "bench_lineage.py"), "--quick", "--dsn", closed],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    assert "PostgreSQL: skipped" in result.stdout
    assert "SQLite: why(answer), 1,000-event causal DAG" in result.stdout
    assert "PostgreSQL: why" not in result.stdout
