"""The README's Quickstart, run as a newcomer would: a fresh clone, a fresh venv, the first
command block of ``## Quickstart`` verbatim (install with extras, then ``agentledger demo``).

Slow (a real ``pip install`` from the package index); marked ``slow``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def quickstart_block(readme: str) -> str:
    """The first fenced ``bash`` block after the ``## Quickstart`` heading."""
    section = readme.split("## Quickstart", 1)[1]
    found = re.search(r"```(?:bash|sh|console)\n(.*?)```", section, re.DOTALL)
    assert found, "README ## Quickstart has no bash block"
    return found.group(1)


@pytest.mark.slow
def test_readme_quickstart_from_a_fresh_clone(tmp_path: Path) -> None:
    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        pytest.skip("needs a git checkout to clone")
    clone = tmp_path / "agentledger"
    subprocess.run(
        ["git", "clone", "--quiet", "--depth", "1", f"file://{ROOT}", str(clone)], check=True
    )
    block = quickstart_block((clone / "README.md").read_text())
    assert "agentledger demo" in block
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("VIRTUAL_ENV", "PYTHON", "AGENTLEDGER_", "OPENAI_"))
    }
    env.update(COLUMNS="160", NO_COLOR="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    done = subprocess.run(
        ["bash", "-e", "-c", block],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    # pip's notes about the machine's index configuration would bury the real error.
    errors = "\n".join(line for line in done.stderr.splitlines() if "Location" not in line)
    output = f"{done.stdout[-4000:]}\n--- stderr ---\n{errors[-4000:]}"
    assert done.returncode == 0, output
    assert "I refunded the duplicate charge" in done.stdout, output
    assert "intact" in done.stdout
    assert (clone / ".venv" / "bin" / "agentledger").exists()  # it used the fresh venv
