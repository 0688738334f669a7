"""``agentledger demo``: run a LangChain support agent against a ledger, then ask it why.

The steps and what the printout shows are described in ``docs/design/demo.md``.
"""

from __future__ import annotations

import functools
import tempfile
import time
from pathlib import Path

import httpx
import uuid_utils
from langchain_core.language_models import BaseChatModel
from rich.console import Console
from rich.markup import escape

from agentledger.client import DEFAULT_URL, Ledger, resolve_api_key
from agentledger.client import vocabulary as v
from agentledger.demo._support_agent import (
    CUSTOMER_MESSAGE,
    build_support_agent,
    chat_model,
)
from agentledger.integrations.langchain import LedgerCallbackHandler
from agentledger.testing import EmbeddedServer, EmbeddedServerError
from agentledger.timeline import print_chain_report, print_lineage, print_timeline

__all__ = ["DemoError", "run_demo"]


class DemoError(EmbeddedServerError):
    """The demo could not run (model unavailable...); a server that did not start raises
    :class:`~agentledger.testing.EmbeddedServerError`, its base (a
    :class:`~agentledger.protocol.LedgerError`)."""


def run_demo(
    *,
    console: Console,
    db: Path | None = None,
    url: str | None = None,
    api_key: str | None = None,
    model: str | None = None,
    agent: str = "support-demo",
    keep_serving: bool = False,
) -> int:
    """Run the demo end to end and print the results; returns the process exit code.

    Args:
        console: where to print (rich).
        db: SQLite file for the embedded server (default: a new temp directory).
        url: use this running server instead of starting one (then ``api_key`` or
            ``AGENTLEDGER_API_KEY`` is needed).
        api_key: key for ``url``.
        model: an OpenAI-compatible model id (needs ``langchain-openai``).
        agent: agent name the events are logged under.
        keep_serving: keep the embedded server running after the printout, until Ctrl-C,
            so its dashboard and API can be explored.

    Raises:
        EmbeddedServerError: the embedded server did not start.
        DemoError: a real model was asked for and
            ``langchain-openai`` is missing, or the agent run failed.
    """
    try:
        llm = chat_model(model)
    except RuntimeError as error:
        raise DemoError(str(error)) from error
    if url is not None:
        key = resolve_api_key(api_key)
        if not key:
            raise DemoError("--url needs --api-key (or AGENTLEDGER_API_KEY)")
        return _run(console, url=url, api_key=key, agent=agent, llm=llm, db=None, live=True)
    db_path = db or Path(tempfile.mkdtemp(prefix="agentledger-demo-")) / "ledger.db"
    db_path.parent.mkdir(parents=True, exist_ok=True)
    console.print(f"[dim]starting agentledger serve (SQLite {db_path})…[/]")
    with EmbeddedServer(db_path) as server:
        code = _run(
            console,
            url=server.url,
            api_key=server.api_key,
            agent=agent,
            llm=llm,
            db=db_path,
            live=keep_serving,
        )
        if keep_serving:
            try:  # Ctrl-C right after the line below is printed is a normal stop too
                console.print(
                    f"[bold]serving {server.url} (dev key {server.api_key}); Ctrl-C to stop[/]"
                )
                console.print(
                    f"dashboard (this link opens it without a login): {server.dashboard_url()}",
                    soft_wrap=True,
                )
                server.wait()
            except KeyboardInterrupt:
                console.print("[dim]stopping…[/]")
        return code


def _run(
    console: Console,
    *,
    url: str,
    api_key: str,
    agent: str,
    llm: BaseChatModel,
    db: Path | None,
    live: bool,
) -> int:
    session_id = f"support-{uuid_utils.uuid7()}"
    ledger = Ledger(url=url, api_key=api_key, agent=agent, spill_dir=None)
    try:
        handler = LedgerCallbackHandler(ledger, metadata={"demo": "support-case"})
        graph = build_support_agent(llm)
        console.rule("[bold]agentledger demo: a support agent handles a duplicate charge")
        console.print(f"[bold cyan]customer:[/] {escape(CUSTOMER_MESSAGE)}")
        started = time.perf_counter()
        try:
            result = graph.invoke(
                {"messages": [{"role": "user", "content": CUSTOMER_MESSAGE}]},
                config={"callbacks": [handler], "configurable": {"thread_id": session_id}},
            )
        except Exception as error:  # a real model's network or auth error
            raise DemoError(f"the agent run failed: {type(error).__name__}: {error}") from error
        elapsed_s = time.perf_counter() - started
        console.print(f"[bold green]agent:[/] {escape(result['messages'][-1].text)}")
        flushed = ledger.flush(timeout_s=10.0)
        console.print(
            f"[dim]agent run {elapsed_s * 1000:,.0f} ms; {flushed.sent} events sent in "
            f"{flushed.elapsed_s * 1000:,.0f} ms (pending {flushed.pending}, "
            f"dropped {flushed.dropped})[/]"
        )

        events = ledger.replay(session_id)
        console.rule(f"[bold]session replay: {session_id} ({len(events)} events)")
        print_timeline(console, events)

        answer = next((e for e in reversed(events) if e.event == v.ASSISTANT_RESPONSE), None)
        if answer is None:
            console.print("[bold red]no assistant_response event was stored[/]")
            return 1
        why = ledger.why(answer.event_id)
        console.rule(f"[bold]why({answer.event_id}): what the answer was computed from")
        print_lineage(console, why, how_to_raise="depth or limit (agentledger why --depth)")

        console.rule("[bold]hash chain")
        report = ledger.verify_chain()
        print_chain_report(console, report, agent)
        _print_next_steps(
            console,
            url=url if live else DEFAULT_URL,
            api_key=api_key if live and db is not None else None,
            agent=agent,
            session_id=session_id,
            db=None if live else db,
            answer=answer.event_id,
            dashboard=_has_dashboard(url),
        )
        return 0 if report.intact else 1
    finally:
        ledger.close(timeout_s=5.0)


def _has_dashboard(url: str) -> bool:
    """Whether the server serves the web dashboard at ``/ui/`` (an optional part)."""
    try:
        return httpx.get(f"{url}/ui/", timeout=5.0).status_code != 404
    except httpx.HTTPError:
        return False


def _print_next_steps(
    console: Console,
    *,
    url: str,
    api_key: str | None,
    agent: str,
    session_id: str,
    db: Path | None,
    answer: str,
    dashboard: bool,
) -> None:
    """Where to look next, as commands that work when pasted. ``db`` set: the server is
    gone, say how to serve the file again; ``api_key`` set: the embedded server keeps
    running, name its URL and dev key; neither: the user's own server (``--url``)."""
    console.rule("[bold]where to look next")
    say = functools.partial(console.print, soft_wrap=True)  # keep URLs whole (clickable)
    if db is not None:
        say(f"• the ledger is kept in [bold]{escape(str(db))}[/]; serve it again with")
        say(f"    agentledger serve --db {db} --dev-key dev")
        say("  (or run [bold]agentledger demo --keep-serving[/]), then:")
        say(f"    export AGENTLEDGER_API_KEY=dev AGENTLEDGER_AGENT={agent}")
    elif api_key is not None:
        say("• while this server runs (until Ctrl-C), in another shell:")
        say(
            f"    export AGENTLEDGER_URL={url} AGENTLEDGER_API_KEY={api_key} "
            f"AGENTLEDGER_AGENT={agent}"
        )
    else:
        say(
            f"    export AGENTLEDGER_URL={url} AGENTLEDGER_AGENT={agent}"
            "  # and your AGENTLEDGER_API_KEY"
        )
    say(f"• the session:  agentledger replay {session_id}")
    say(f"• why this answer:  agentledger why {answer}")
    if dashboard:
        say(
            "• dashboard (open the `dashboard:` link the server prints first; it logs this "
            "browser in):"
        )
        say(f"• dashboard, this session:  {url}/ui/sessions/{session_id}?agent={agent}")
        say(f"• dashboard, why + impact of the answer:  {url}/ui/events/{answer}")
    say(f"• over HTTP:  GET {url}/v1/events/{answer}/why  and  .../impact  (docs: {url}/swagger)")
    say(
        "• add it to your own agent:\n"
        "    from agentledger.integrations.langchain import LedgerCallbackHandler\n"
        '    agent.invoke(inputs, config={"callbacks": [LedgerCallbackHandler(ledger)]})'
    )
