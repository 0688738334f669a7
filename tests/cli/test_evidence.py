"""``agentledger evidence EVENT_ID --out`` and ``agentledger evidence verify`` against a real
server (docs/pages/evidence.md and README, "Evidence bundles"): a bundle downloads and
verifies with the public key; a tampered, corrupt or truncated zip, a wrong key and another
agent each exit 1 with a message that says which."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest

from _bundles import active_key, files_of, rezip, segment, write_graph
from _servers import ServerProcess

from .conftest import Cli


@pytest.fixture
def downloaded(cli: Cli, ledger_server: ServerProcess, tmp_path: Path) -> tuple[Path, str, str]:
    agent = f"cli-evidence-{uuid.uuid4().hex[:8]}"
    event = write_graph(ledger_server, agent)[2]
    out = tmp_path / "bundle.zip"
    args = ["--url", ledger_server.url, "--api-key", ledger_server.api_key]
    result = cli("evidence", event, "--out", out, *args)
    assert result.exit_code == 0, result.output
    assert f"wrote the evidence bundle of {event} to {out}" in result.stderr
    return out, active_key(ledger_server), agent


def test_download_and_verify(cli: Cli, downloaded: tuple[Path, str, str], tmp_path: Path) -> None:
    out, key, agent = downloaded
    result = cli("evidence", "verify", out, "--public-key", key, "--agent", agent)
    assert result.exit_code == 0, result.output
    assert "verified" in result.stdout and "NOT" not in result.stdout
    assert "signed head of" in result.stdout
    key_file = tmp_path / "key.hex"
    key_file.write_text(key + "\n")
    as_json = cli("evidence", "verify", out, "--public-key", key_file, "--json")
    assert as_json.exit_code == 0, as_json.output
    doc: dict[str, Any] = json.loads(as_json.stdout)
    assert doc["ok"] is True and doc["records"] == 5 and doc["problems"] == []


def test_tampered_bundle_exits_1_naming_the_record(
    cli: Cli, downloaded: tuple[Path, str, str], tmp_path: Path
) -> None:
    out, key, _ = downloaded
    files = files_of(out.read_bytes())
    doc = segment(files)
    doc["rows"][3]["record"] = doc["rows"][3]["record"].replace("42.5", "4250.0")
    files["segments/0.json"] = orjson.dumps(doc)
    tampered = tmp_path / "tampered.zip"
    tampered.write_bytes(rezip(files))
    result = cli("evidence", "verify", tampered, "--public-key", key)
    assert result.exit_code == 1
    assert "NOT verified" in result.stdout
    assert "record_checksum at segments/0.json #4" in result.stdout


@pytest.mark.parametrize(
    ("name", "make", "message"),
    [
        ("corrupt", lambda raw: b"PK\x03\x04" + bytes(200), "not a readable zip"),
        ("truncated", lambda raw: raw[: len(raw) // 2], "not a readable zip"),
        ("empty", lambda raw: rezip({}), "bundle has no manifest.json"),
    ],
)
def test_unreadable_bundles_exit_1(
    cli: Cli, downloaded: tuple[Path, str, str], tmp_path: Path, name: str, make: Any, message: str
) -> None:
    out, key, _ = downloaded
    bad = tmp_path / f"{name}.zip"
    bad.write_bytes(make(out.read_bytes()))
    result = cli("evidence", "verify", bad, "--public-key", key)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: {bad}: ") and message in result.stderr


def test_a_missing_file_exits_1(
    cli: Cli, downloaded: tuple[Path, str, str], tmp_path: Path
) -> None:
    out, key, _ = downloaded
    files = files_of(out.read_bytes())
    del files["lineage.json"]
    bad = tmp_path / "missing.zip"
    bad.write_bytes(rezip(files))
    result = cli("evidence", "verify", bad, "--public-key", key)
    assert result.exit_code == 1 and "bundle has no lineage.json" in result.stderr


def test_wrong_key_and_other_agent_exit_1(cli: Cli, downloaded: tuple[Path, str, str]) -> None:
    out, key, agent = downloaded
    other = "11" * 32
    result = cli("evidence", "verify", out, "--public-key", other)
    assert result.exit_code == 1 and "wrong key: manifest.json is signed by" in result.stderr
    both = cli("evidence", "verify", out, "--public-key", other, "--public-key", key)
    assert both.exit_code == 0, both.output  # several keys: any of them may sign
    result = cli("evidence", "verify", out, "--public-key", key, "--agent", "someone-else")
    assert result.exit_code == 1
    assert f"bundle is for agent {agent!r}, not 'someone-else'" in result.stderr


def test_usage_mistakes_exit_2(cli: Cli, ledger_server: ServerProcess, tmp_path: Path) -> None:
    assert cli("evidence", "verify").exit_code == 2
    no_key = cli("evidence", "verify", tmp_path / "x.zip")
    assert no_key.exit_code == 2 and "--public-key" in no_key.stderr
    assert cli("evidence", str(uuid.uuid4())).exit_code == 2  # no --out
    unknown = cli(
        "evidence", str(uuid.uuid4()), "--out", tmp_path / "b.zip",
        "--url", ledger_server.url, "--api-key", ledger_server.api_key,
    )  # fmt: skip
    assert unknown.exit_code == 1 and "no event" in unknown.stderr
    assert not (tmp_path / "b.zip").exists()
