"""Record a vcrpy cassette for a case's HTTP-backed tools, once, against the live system.

:func:`record_cassette` writes ``<case>.cassette.yaml`` next to the case file and sets
``case.cassette``; credentials are filtered and bodies pseudonymised (``docs/design/cases.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.tools import BaseTool

from agentledger.cases._model import Case, Cassette, save_case
from agentledger.cases._pseudonym import Pseudonymizer

__all__ = ["FILTERED_HEADERS", "record_cassette"]

#: Request headers never written to a cassette.
FILTERED_HEADERS = ("authorization", "cookie", "x-api-key", "proxy-authorization", "api-key")


def record_cassette(
    case: Case,
    case_file: str | Path,
    tools: Sequence[BaseTool],
    tool_names: Sequence[str],
    *,
    passthrough_urls: Sequence[str] = (),
) -> Case:
    """Record the HTTP traffic of the source calls of ``tool_names`` and save the case.

    Args:
        case: the case (its ``tool_stubs`` give the calls, in source order).
        case_file: the case's JSON file (rewritten with ``cassette`` set).
        tools: the real tools, run live once.
        tool_names: the HTTP-backed tools to record.
        passthrough_urls: URL prefixes not recorded (e.g. a ledger the tools log to).

    Returns:
        the updated case.

    Raises:
        KeyError: a name is not among ``tools``.
        Exception: whatever a real tool raises.
    """
    import vcr  # optional dependency of the cases extra

    by_name = {t.name: t for t in tools}
    missing = [n for n in tool_names if n not in by_name]
    if missing:
        raise KeyError(f"tools not found: {missing}")
    path = Path(case_file)
    cassette = path.with_name(path.stem + ".cassette.yaml")
    prefixes = tuple(passthrough_urls)

    def keep(request: Any) -> Any:
        return None if any(request.uri.startswith(p) for p in prefixes) else request

    pseudo = Pseudonymizer()

    def clean_response(response: dict[str, Any]) -> dict[str, Any]:
        body = response.get("body") or {}
        raw = body.get("string")
        if isinstance(raw, bytes):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                return response
            pseudo.learn(text)
            new = str(pseudo.apply(text)).encode("utf-8")
            body["string"] = new
            headers = response.get("headers") or {}
            for name in list(headers):
                if name.lower() == "content-length":
                    headers[name] = [str(len(new))]
                elif name.lower() == "set-cookie":
                    del headers[name]
        return response

    recorder = vcr.VCR(
        record_mode="all",
        before_record_request=keep,
        before_record_response=clean_response,
        filter_headers=list(FILTERED_HEADERS),
        decode_compressed_response=True,
        match_on=("method", "scheme", "host", "port", "path", "query", "body"),
    )
    if cassette.exists():
        cassette.unlink()
    with recorder.use_cassette(str(cassette)):
        for name, args in case.source_path():
            if name in tool_names:
                by_name[name].invoke(args)
    case.cassette = Cassette(path=cassette.name, tools=list(tool_names))
    save_case(case, path)
    return case
