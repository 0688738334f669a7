"""``_config.py`` is the client package's only reader of the process environment."""

from __future__ import annotations

import ast
from pathlib import Path

import agentledger.client

PACKAGE = Path(agentledger.client.__file__).resolve().parent
NAMES = {"environ", "getenv", "environb", "getenvb", "putenv", "unsetenv"}


def _env_uses(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in NAMES:
            found.append(f"{path.name}:{node.lineno}: .{node.attr}")
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            names = [alias.name for alias in node.names if alias.name in NAMES]
            found += [f"{path.name}:{node.lineno}: os.{name}" for name in names]
    return found


def test_only_config_reads_the_environment() -> None:
    uses = [
        use
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "_config.py"
        for use in _env_uses(path)
    ]
    assert uses == []


def test_the_check_sees_a_reader(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("import os\nfrom os import getenv\nx = os.environ.get('A')\n")
    assert _env_uses(module) == ["m.py:2: os.getenv", "m.py:3: .environ"]
