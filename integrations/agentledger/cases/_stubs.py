"""Stub tools: the candidate's tools, answered from a case instead of the real systems.

:func:`stub_tools` copies each real tool's name, description and argument schema; its body asks
a :class:`StubRegistry`. Matching rules and cassette-backed tools: ``docs/design/cases.md``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool, ToolException

from agentledger.cases._model import Case, StubCall
from agentledger.protocol import LedgerError

__all__ = ["StubRegistry", "UnexpectedToolCall", "stub_tools"]


class UnexpectedToolCall(ToolException, LedgerError):
    """A tool call the source session did not make (tool or arguments)."""


def _canonical(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _key(args: dict[str, Any]) -> str:
    return json.dumps(_canonical(args), sort_keys=True, default=str)


class StubRegistry:
    """Serves one case's recorded tool answers for one run (thread-safe).

    Args:
        case: the case whose ``tool_stubs`` answer the calls.
        case_dir: directory of the case file (a cassette path is relative to it).
        passthrough_urls: URL prefixes vcrpy lets through to the network while a cassette is
            in use (the ledger the run logs to).

    Attributes:
        failures: one text per unexpected call, e.g. ``"issue_refund(amount=10) not in the
            source session (source args: ...)"``.
        calls: every call received, in order: ``(tool, args)``.
    """

    def __init__(
        self,
        case: Case,
        case_dir: Path | None = None,
        passthrough_urls: Sequence[str] = (),
    ) -> None:
        self.case = case
        self.case_dir = case_dir or Path.cwd()
        self.passthrough_urls = tuple(passthrough_urls)
        self.failures: list[str] = []
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self._defaults: dict[str, dict[str, Any]] = {}
        self._by_key: dict[tuple[str, str], list[StubCall]] = {}
        self._served: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()
        self._index()

    def _index(self) -> None:
        self._by_key = {}
        for tool, stubs in self.case.tool_stubs.items():
            for stub in sorted(stubs, key=lambda s: s.order):
                self._by_key.setdefault((tool, self._key(tool, stub.args)), []).append(stub)

    def _key(self, tool: str, args: dict[str, Any]) -> str:
        return _key({**self._defaults.get(tool, {}), **args})

    def set_defaults(self, tool: str, defaults: dict[str, Any]) -> None:
        """Argument defaults of ``tool``'s schema: a recorded call without an argument
        matches a call that got its default (LangChain fills defaults in before the body)."""
        with self._lock:
            self._defaults[tool] = dict(defaults)
            self._index()

    @property
    def cassette_tools(self) -> frozenset[str]:
        """Tools that run for real with HTTP replayed from the cassette."""
        return frozenset(self.case.cassette.tools) if self.case.cassette else frozenset()

    def answer(self, tool: str, args: dict[str, Any]) -> Any:
        """The recorded result for this call.

        Raises:
            UnexpectedToolCall: not a call of the source session (also recorded).
            ToolException: the source call failed; its error text.
        """
        with self._lock:
            key = (tool, self._key(tool, args))
            self.calls.append((tool, dict(args)))
            stubs = self._by_key.get(key)
            if not stubs:
                known = self.case.tool_stubs.get(tool)
                shown = ", ".join(f"{k}={json.dumps(v, default=str)}" for k, v in args.items())
                if known:
                    source = "; ".join(_key(s.args) for s in known)
                    text = f"{tool}({shown}): arguments not in the source session ({source})"
                else:
                    text = f"{tool}({shown}): tool not called in the source session"
                self.failures.append(text)
                raise UnexpectedToolCall(f"unexpected tool call (regression stub): {text}")
            index = self._served.get(key, 0)
            self._served[key] = index + 1
            stub = stubs[min(index, len(stubs) - 1)]
        if stub.error is not None:
            raise ToolException(stub.error)
        return stub.result

    def cassette(self) -> Any:
        """A vcrpy context manager playing the case's cassette in record mode ``none``."""
        import vcr  # optional: only for cases with a cassette

        assert self.case.cassette is not None
        passthrough = self.passthrough_urls

        def skip_ledger(request: Any) -> Any:
            return None if any(request.uri.startswith(p) for p in passthrough) else request

        recorder = vcr.VCR(
            record_mode="none",
            before_record_request=skip_ledger,
            match_on=("method", "scheme", "host", "port", "path", "query", "body"),
        )
        return recorder.use_cassette(
            str(self.case_dir / self.case.cassette.path), allow_playback_repeats=True
        )


def _schema_defaults(schema: Any) -> dict[str, Any]:
    """Defaults of a tool's argument schema (a pydantic model class or a JSON Schema dict)."""
    if isinstance(schema, dict):
        properties = schema.get("properties") or {}
        return {
            k: p["default"] for k, p in properties.items() if isinstance(p, dict) and "default" in p
        }
    fields = getattr(schema, "model_fields", None) or {}
    out: dict[str, Any] = {}
    for name, info in fields.items():
        if not info.is_required() and info.default_factory is None:
            out[name] = info.default
    return out


def _stub(real: BaseTool, registry: StubRegistry) -> BaseTool:
    name = real.name
    defaults = _schema_defaults(real.args_schema)
    if defaults:
        registry.set_defaults(name, defaults)

    if name in registry.cassette_tools:

        def run(**kwargs: Any) -> Any:
            with registry._lock:
                registry.calls.append((name, dict(kwargs)))
            with registry.cassette():
                # No callbacks: the stub's own run is what the ledger sees (one tool_call).
                return real.invoke(kwargs, config={"callbacks": []})

    else:

        def run(**kwargs: Any) -> Any:
            return registry.answer(name, kwargs)

    return StructuredTool.from_function(
        func=run,
        name=name,
        description=real.description,
        args_schema=real.args_schema,
        return_direct=real.return_direct,
        handle_tool_error=True,
    )


def stub_tools(tools: Sequence[BaseTool], registry: StubRegistry) -> list[BaseTool]:
    """Stand-ins for ``tools`` served by ``registry`` (same names, descriptions, schemas).

    Args:
        tools: the candidate's real tools (``module:TOOLS``); never executed, except the
            cassette-backed ones, under the cassette.
        registry: the case's registry for this run.

    Raises:
        TypeError: an item is not a LangChain ``BaseTool``.
    """
    out: list[BaseTool] = []
    for real in tools:
        if not isinstance(real, BaseTool):
            raise TypeError(f"TOOLS must hold LangChain tools, got {type(real).__name__}")
        out.append(_stub(real, registry))
    return out
