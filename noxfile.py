"""Test sessions. ``python -m nox`` runs them all; CI (``.ci/run``) runs exactly that.

crewai and livekit-agents pin conflicting versions of ``json-repair`` and ``openai``, so each
gets its own virtualenv; everything else shares the ``tests`` session.
"""

from __future__ import annotations

import os

import nox

nox.options.sessions = ["lint", "tests", "crewai", "livekit"]
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = True

PYTHON = "3.11"
SOURCES = ["core_client", "server", "integrations"]
FRAMEWORKS = "langchain,mcp,similarity,openai,openai-agents,pydantic-ai"
MAIN_EXTRAS = f".[server,postgres,dev,{FRAMEWORKS}]"
LINT_EXTRAS = f".[server,postgres,dev,docs,{FRAMEWORKS}]"


def _pytest(session: nox.Session, *args: str) -> None:
    # Exit code 5 (no tests collected) is a failure: a suite that runs nothing proves nothing.
    session.run("pytest", "-p", "no:cacheprovider", "-ra", *args, *session.posargs)


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """The house rules: ruff (incl. the environment ban), mypy --strict, import contracts, the
    generated sync client, the layout tests (private imports, module budget, public names,
    exception root), references that resolve inside the repository, and the docs site."""
    session.install("-e", LINT_EXTRAS)
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", *SOURCES, "tests", "benchmarks", "examples")
    session.run("mypy", *SOURCES)
    session.run("lint-imports")
    session.run("python", "core_client/generate_sync.py", "--check")
    _pytest(session, "tests/layout", "tests/test_doc_references.py")
    session.run(
        "mkdocs",
        "build",
        "--strict",
        "--quiet",
        "-f",
        "docs/mkdocs.yml",
        "-d",
        session.create_tmp() + "/site",
    )


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """Server, client, LangChain/LangGraph, OpenAI SDK, OpenAI Agents SDK, Pydantic AI, MCP and
    packaging tests (SQLite and PostgreSQL)."""
    # langchain-openai: the prompt-change tests drive ChatOpenAI against a local model server
    session.install("-e", MAIN_EXTRAS, "langchain-openai>=1.1")
    _pytest(
        session,
        "tests",
        "--ignore=tests/integrations/crewai",
        "--ignore=tests/integrations/livekit",
    )


@nox.session(python=PYTHON)
def crewai(session: nox.Session) -> None:
    """CrewAI listener tests, in their own environment (conflicting pins with livekit)."""
    session.install("-e", ".[server,crewai,dev]")
    env = {
        "CREWAI_DISABLE_TELEMETRY": "true",
        "OTEL_SDK_DISABLED": "true",
        "CREWAI_TRACING_ENABLED": "false",
        "CREWAI_DISABLE_TRACKING": "true",
    }
    os.environ.update(env)
    session.run("mypy", "integrations/agentledger/integrations/crewai")
    _pytest(session, "tests/integrations/crewai")


@nox.session(python=PYTHON)
def livekit(session: nox.Session) -> None:
    """LiveKit Agents observer tests, in their own environment."""
    session.install("-e", ".[server,livekit,dev]")
    session.run("mypy", "integrations/agentledger/integrations/livekit")
    _pytest(session, "tests/integrations/livekit")
