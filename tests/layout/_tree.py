"""The source tree as the layout checks see it: every module of the three source roots."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SOURCE_ROOTS = ("core_client", "server", "integrations")


@dataclass(frozen=True)
class Module:
    """One ``.py`` file of a source root and the dotted name it is imported by."""

    path: Path
    name: str

    @property
    def relative(self) -> str:
        return self.path.relative_to(REPO).as_posix()


def source_modules() -> Iterator[Module]:
    """Every module under ``core_client/``, ``server/`` and ``integrations/``, sorted."""
    for root in SOURCE_ROOTS:
        base = REPO / root
        for path in sorted(base.rglob("*.py")):
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            yield Module(path, ".".join(parts))
