"""Write the blocking client from the asyncio one, so the client's I/O code exists once.

``_async_client.py`` (:class:`AsyncLedger`), ``_async_reads.py`` and ``_async_admin.py`` are the
source of truth; ``_client.py`` (:class:`Ledger`), ``_reads.py`` and ``_admin.py`` are made from
them by text substitutions (``async def`` -> ``def``, ``await x`` -> ``x``, ``AsyncLedger`` ->
``Ledger``, ``httpx.AsyncClient`` -> ``httpx.Client``, ``aclose`` -> ``close``...), then imports
are sorted and the code formatted with ruff. See docs/design/client-sync-async.md.

Usage::

    python core_client/generate_sync.py           # rewrite the generated modules
    python core_client/generate_sync.py --check   # exit 1 if a committed one is out of date
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent / "agentledger" / "client"

#: Renames applied, in this order, to whole words of every source. The paired helpers of the
#: client follow one naming rule: ``async_x`` has the blocking twin ``sync_x``.
WORD_RULES: tuple[tuple[str, str], ...] = (
    (r"async def", "def"),
    (r"async with", "with"),
    (r"async for", "for"),
    (r"await ", ""),
    (r"__aenter__", "__enter__"),
    (r"__aexit__", "__exit__"),
    (r"aclose", "close"),
    (r"aread", "read"),
    (r"aiter_lines", "iter_lines"),
    (r"_async_(\w+)", r"_\1"),
    (r"async_(\w+)", r"sync_\1"),
    (r"Async([A-Z]\w*)", r"\1"),
)

_COMPILED = tuple(
    (re.compile(rf"\b{pattern}" + (r"(?!\w)" if pattern[-1].isalnum() else "")), new)
    for pattern, new in WORD_RULES
)


class GenerationError(Exception):
    """A source does not have the shape the generator expects."""


@dataclass(frozen=True)
class Twin:
    """One generated module.

    Attributes:
        source: the asyncio module (file name in the client package).
        target: the module written from it.
        docstring: the module docstring of the target (the source's own is dropped).
        edits: ``(old, new)`` texts replaced in the source before the word renames, for the
            few places where the blocking client really differs; each ``old`` must occur
            exactly once.
    """

    source: str
    target: str
    docstring: str
    edits: tuple[tuple[str, str], ...] = ()


TWINS: tuple[Twin, ...] = (
    Twin(
        source="_async_reads.py",
        target="_reads.py",
        docstring=(
            "The reads of :class:`Ledger`: each builds its :class:`Call` (``_calls.py``) and "
            "sends\nit with retries on the client's ``httpx.Client``; errors map to the "
            "client's error tree."
        ),
        edits=(
            (
                "            for event in page:\n                yield event\n",
                "            yield from page\n",
            ),
        ),
    ),
    Twin(
        source="_async_admin.py",
        target="_admin.py",
        docstring=(
            "Administration on :class:`Ledger`: API keys and retention policies. These need "
            "a\n``read_write`` key not bound to an agent; they use the same :class:`Call` path "
            "(retries,\nerror mapping) as every read."
        ),
    ),
    Twin(
        source="_async_client.py",
        target="_client.py",
        docstring=(
            "The blocking client, :class:`Ledger`: constructor, flush and close, bulk export "
            "and\nimport; its other reads come from :class:`LedgerReads` and administration from\n"
            ":class:`LedgerAdmin`."
        ),
        edits=(
            ("(reads are coroutines).", "(blocking reads)."),
            (
                "        transport: an ``httpx.AsyncBaseTransport`` for the reads (tests inject "
                "faults here).\n"
                "        sender_transport: httpx transport of the background sender thread.\n",
                "        transport: httpx transport for reads and, unless ``sender_transport`` "
                "is given, for\n"
                "            the background sender (tests inject faults here).\n"
                "        sender_transport: httpx transport of the background sender only.\n",
            ),
            (
                "            sender_transport=sender_transport,\n",
                "            sender_transport=sender_transport or transport,\n",
            ),
        ),
    ),
)


def _header(twin: Twin) -> str:
    return (
        f"# Generated from {twin.source} by core_client/generate_sync.py: do not edit.\n"
        "# Change the asyncio source, then run `python core_client/generate_sync.py`.\n"
    )


def rename_words(text: str) -> str:
    """Apply :data:`WORD_RULES` to ``text``."""
    for pattern, new in _COMPILED:
        text = pattern.sub(new, text)
    return text


def unasync(twin: Twin, source: str) -> str:
    """The blocking module for the asyncio ``source`` text of ``twin``, before formatting."""
    if not source.startswith('"""'):
        raise GenerationError(f"{twin.source}: must start with its module docstring")
    body = source[source.index('"""', 3) + 3 :]
    for old, new in twin.edits:
        count = body.count(old)
        if count != 1:
            raise GenerationError(
                f"{twin.source}: edit {old.strip()[:60]!r} matches {count} times, expected 1"
            )
        body = body.replace(old, new)
    return f'{_header(twin)}"""{twin.docstring}"""{rename_words(body)}'


def _ruff(args: Sequence[str], text: str, path: Path) -> str:
    command = [sys.executable, "-m", "ruff", *args, "--stdin-filename", str(path), "-"]
    done = subprocess.run(command, input=text, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise GenerationError(f"ruff {args[0]} failed on {path.name}:\n{done.stderr}")
    return done.stdout


def render(twin: Twin, source: str) -> str:
    """The blocking module for ``source``: :func:`unasync`, imports sorted, ruff-formatted
    (with the repository's ruff settings, wherever the files are)."""
    path = PACKAGE / twin.target
    text = unasync(twin, source)
    text = _ruff(["check", "--fix-only", "--exit-zero", "--select", "I"], text, path)
    return _ruff(["format"], text, path)


def stale(package: Path = PACKAGE) -> list[str]:
    """Messages for every generated module of ``package`` that differs from its source."""
    problems = []
    for twin in TWINS:
        expected = render(twin, (package / twin.source).read_text(encoding="utf-8"))
        target = package / twin.target
        current = target.read_text(encoding="utf-8") if target.exists() else None
        if current != expected:
            problems.append(
                f"{target} is out of date with {twin.source}: "
                "run `python core_client/generate_sync.py`"
            )
    return problems


def write(package: Path = PACKAGE) -> list[Path]:
    """Rewrite every generated module of ``package``; returns the files that changed."""
    changed = []
    for twin in TWINS:
        expected = render(twin, (package / twin.source).read_text(encoding="utf-8"))
        target = package / twin.target
        if not target.exists() or target.read_text(encoding="utf-8") != expected:
            target.write_text(expected, encoding="utf-8")
            changed.append(target)
    return changed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--check", action="store_true", help="only report out-of-date files (exit 1)"
    )
    args = parser.parse_args(argv)
    try:
        if args.check:
            problems = stale()
            for problem in problems:
                sys.stderr.write(problem + "\n")
            return 1 if problems else 0
        for path in write():
            sys.stdout.write(f"wrote {path}\n")
    except GenerationError as error:
        sys.stderr.write(f"generate_sync: {error}\n")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
