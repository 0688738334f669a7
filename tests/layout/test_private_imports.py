"""No package imports another package's private modules or names.

A dotted path is private from its first component that starts with ``_``; the package that owns
it is everything before that component. ``agentledger.integrations.langchain._runs`` may import
``agentledger.integrations._shared`` (it lies inside ``agentledger.integrations``), but
``agentledger.cases`` may not import ``agentledger.client._sanitize``: it must use a public name.
Examples are user code and may use public names only.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from layout._tree import REPO, source_modules


def _owner(dotted: str) -> str | None:
    """The package owning the first private component of ``dotted``, or None if all public."""
    parts = dotted.split(".")
    for index, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:index])
    return None


def _imported_paths(tree: ast.AST, module: str, is_package: bool) -> Iterator[tuple[int, str]]:
    """(line, dotted path) for every import of an ``agentledger`` module or name."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".") if is_package else module.split(".")[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join([*package, base] if base else package)
            for alias in node.names:
                yield node.lineno, f"{base}.{alias.name}"


def _violations(path: Path, module: str) -> Iterator[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    for line, dotted in _imported_paths(tree, module, is_package):
        if not dotted.startswith("agentledger."):
            continue
        owner = _owner(dotted)
        if owner is None:
            continue
        if module == owner or module.startswith(owner + "."):
            continue
        yield f"{path.relative_to(REPO).as_posix()}:{line}: {module} imports {dotted}"


def test_source_packages_import_only_public_names_of_other_packages() -> None:
    """Layout rule: a private module is private to the package that holds it."""
    found = [v for m in source_modules() for v in _violations(m.path, m.name)]
    assert not found, "cross-package private imports:\n" + "\n".join(found)


@pytest.mark.parametrize("path", sorted((REPO / "examples").rglob("*.py")), ids=lambda p: p.name)
def test_examples_use_public_names_only(path: Path) -> None:
    found = list(_violations(path, "examples." + path.stem))
    assert not found, "\n".join(found)


def test_the_rule_sees_a_violation() -> None:
    """The check itself: a cross-package private import is found, an in-package one is not."""
    source = "from agentledger.client._sanitize import snapshot\nfrom . import _x\n"
    tree = ast.parse(source)
    paths = [p for _, p in _imported_paths(tree, "agentledger.cases._runner", False)]
    assert paths == ["agentledger.client._sanitize.snapshot", "agentledger.cases._x"]
    assert _owner(paths[0]) == "agentledger.client"
    assert _owner(paths[1]) == "agentledger.cases"
