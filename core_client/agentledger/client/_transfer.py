"""NDJSON export/import plumbing shared by both twins (no network I/O here).

Export writes the server's stream line by line; import reads lines lazily and yields chunks,
so neither holds a whole ledger in memory.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

import orjson

__all__ = ["ImportChunks", "ProgressArg", "ProgressFn", "open_export_target", "progress_reporter"]

#: Progress callback: receives the running count of events (lines) handled.
ProgressFn = Callable[[int], None]

#: ``progress=``: ``None`` = a rich progress bar on stderr when it is a terminal, ``False`` =
#: none, ``True`` = always a bar, or a callback of the running count.
ProgressArg = bool | ProgressFn | None


@contextlib.contextmanager
def progress_reporter(progress: ProgressArg, label: str) -> Iterator[ProgressFn | None]:
    """Yield the callback to report counts to (a rich bar, the caller's function, or None)."""
    if callable(progress) and not isinstance(progress, bool):
        yield progress
        return
    show = sys.stderr.isatty() if progress is None else bool(progress)
    if not show:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(
        TextColumn(label),
        BarColumn(),
        TextColumn("{task.completed} events"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=False,
    )
    task = bar.add_task(label, total=None)
    with bar:

        def update(count: int) -> None:
            bar.update(task, completed=count)

        yield update


@contextlib.contextmanager
def open_export_target(target: str | os.PathLike[str] | IO[bytes]) -> Iterator[IO[bytes]]:
    """A binary writer for a path (created/truncated, closed afterwards) or a file object
    (left open)."""
    if isinstance(target, str | os.PathLike):
        with open(target, "wb") as out:
            yield out
    else:
        yield target


def _lines_of(source: str | os.PathLike[str] | IO[bytes]) -> Iterator[dict[str, Any]]:
    if isinstance(source, str | os.PathLike):
        with open(source, "rb") as handle:
            yield from _lines_of(handle)
        return
    for number, raw in enumerate(source, start=1):
        line = raw.strip() if isinstance(raw, bytes | str) else raw
        if not line:
            continue
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError as error:
            raise ValueError(f"line {number} is not JSON: {error}") from error
        if not isinstance(obj, dict):
            raise ValueError(f"line {number} is not a JSON object")
        yield obj


class ImportChunks:
    """Iterate ``(offset, events)`` chunks of at most ``chunk_size`` events.

    Args:
        source: an NDJSON path, a binary file object, or an iterable of event dicts.
        chunk_size: events per chunk (≥ 1).

    Raises:
        ValueError: a line is not a JSON object (raised when that line is reached).
    """

    def __init__(
        self,
        source: str | os.PathLike[str] | IO[bytes] | Iterable[dict[str, Any]],
        chunk_size: int,
    ) -> None:
        self._source = source
        self._size = max(1, chunk_size)

    def _events(self) -> Iterator[dict[str, Any]]:
        source = self._source
        if isinstance(source, str | os.PathLike) or hasattr(source, "read"):
            yield from _lines_of(source)  # type: ignore[arg-type]
        else:
            for obj in source:
                yield dict(obj)

    def __iter__(self) -> Iterator[tuple[int, list[dict[str, Any]]]]:
        chunk: list[dict[str, Any]] = []
        offset = 0
        for event in self._events():
            chunk.append(event)
            if len(chunk) >= self._size:
                yield offset, chunk
                offset += len(chunk)
                chunk = []
        if chunk:
            yield offset, chunk
