"""The blocking client is generated from the asyncio one and the committed copy is current."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "core_client" / "generate_sync.py"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("generate_sync", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file runs
    spec.loader.exec_module(module)
    return module


gen = _generator()


def test_committed_sync_client_matches_its_async_source() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr


def test_word_renames() -> None:
    source = (
        "async def f(self) -> AsyncIterator[int]:\n"
        "    async with httpx.AsyncClient() as c:\n"
        "        async for x in (await c.get('/')).aiter_lines():\n"
        "            await async_retrying(p)(self._sender.async_flush)\n"
        "    await self.aclose()\n"
        "    return AsyncLedger, _async_reads, asyncio, aclosed\n"
    )
    assert gen.rename_words(source) == (
        "def f(self) -> Iterator[int]:\n"
        "    with httpx.Client() as c:\n"
        "        for x in (c.get('/')).iter_lines():\n"
        "            sync_retrying(p)(self._sender.sync_flush)\n"
        "    self.close()\n"
        "    return Ledger, _reads, asyncio, aclosed\n"
    )


def test_a_changed_source_is_detected(tmp_path: Path) -> None:
    """The check fails when the async source changed and the sync module was not regenerated."""
    package = tmp_path / "client"
    shutil.copytree(gen.PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))
    assert gen.stale(package) == []
    source = package / "_async_reads.py"
    text = source.read_text(encoding="utf-8")
    source.write_text(
        text.replace('"""Every agent the key may read', '"""All agents the key may read'),
        encoding="utf-8",
    )
    problems = gen.stale(package)
    assert len(problems) == 1 and "_reads.py is out of date" in problems[0]
    assert gen.write(package) == [package / "_reads.py"]
    assert gen.stale(package) == []
    assert '"""All agents the key may read' in (package / "_reads.py").read_text(encoding="utf-8")


def test_an_edit_that_no_longer_matches_fails_loudly() -> None:
    twin = next(t for t in gen.TWINS if t.target == "_client.py")
    source = (gen.PACKAGE / twin.source).read_text(encoding="utf-8")
    changed = source.replace("sender_transport=sender_transport,", "sender_transport=None,")
    with pytest.raises(gen.GenerationError, match="matches 0 times"):
        gen.unasync(twin, changed)
