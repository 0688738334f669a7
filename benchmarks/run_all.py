"""Every benchmark in one run: each ``bench_*.py`` in turn, its table printed as it measured it.

Run: ``python benchmarks/run_all.py`` (full sizes, tens of minutes) or ``--quick`` (the smoke
sizes, a few minutes). ``--only bench_server.py`` (repeatable) picks scripts; ``--out
report.md`` also writes the report as Markdown: when and where it ran (CPU count, load average
before and after, Python and SQLite versions), then each script's output as printed.

Each script measures ours next to its reference in the same run, so every table carries its own
ratio; this runner adds nothing to the numbers. A script whose prerequisite is missing (CrewAI,
Chromium and Playwright, a reachable PostgreSQL) is skipped and says why. A script that fails
is reported with the end of its error output, the others still run, and the exit status is 1.

``--update-docs`` (full sizes only) then merges the tables the scripts printed for the docs
into ``README.md`` and ``docs/pages/benchmarks.md`` (``--doc PATH`` picks other files); how a
block is merged is in ``doc_tables.py``. A failed script's tables are not used.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import os
import platform
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from doc_tables import Table, printed_tables, update_doc

HERE = Path(__file__).resolve().parent
POSTGRES_DEFAULT = "postgresql://postgres@127.0.0.1:5432/test"
QUIET_ENV = {
    "ZIZKADB_TELEMETRY": "false",
    "ZIZKADB_QUIET": "1",
    "CREWAI_DISABLE_TELEMETRY": "true",
    "CREWAI_TRACING_ENABLED": "false",
    "OTEL_SDK_DISABLED": "true",
}


def _missing_module(*names: str) -> Callable[[], str | None]:
    def check() -> str | None:
        absent = [name for name in names if importlib.util.find_spec(name) is None]
        return f"needs {', '.join(absent)} installed" if absent else None

    return check


def _missing_chromium() -> str | None:
    if not Path("/usr/bin/chromium").exists():
        return "needs /usr/bin/chromium"
    return _missing_module("playwright")()


def _missing_postgres() -> str | None:
    if importlib.util.find_spec("psycopg") is None:
        return "needs psycopg installed (the postgres extra)"
    import psycopg

    dsn = os.environ.get("AGENTLEDGER_TEST_POSTGRES_DSN") or POSTGRES_DEFAULT  # as the scripts
    try:
        psycopg.connect(dsn, connect_timeout=3).close()
    except psycopg.Error as exc:
        return f"needs a reachable PostgreSQL ({type(exc).__name__})"
    return None


#: What a script needs beyond the project's own extras; ``None`` from the check means present.
PREREQUISITES: dict[str, Callable[[], str | None]] = {
    "bench_crewai.py": _missing_module("crewai"),
    "bench_dashboard.py": _missing_chromium,
    "bench_lineage.py": _missing_module("psycopg"),  # measures SQLite alone without a server
    "bench_postgres.py": _missing_postgres,
}


@dataclass
class Outcome:
    script: str
    status: str  # "ok", "failed (exit N)" or "skipped: reason"
    seconds: float
    output: str


def _machine() -> str:
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"{os.cpu_count()} CPUs, load average {load}, Python {platform.python_version()}, "
        f"SQLite {sqlite3.sqlite_version}"
    )


def run_script(path: Path, quick: bool, timeout_s: float) -> Outcome:
    """Run one benchmark script in a subprocess and keep what it printed."""
    reason = PREREQUISITES.get(path.name, lambda: None)()
    if reason is not None:
        return Outcome(path.name, f"skipped: {reason}", 0.0, "")
    command = [sys.executable, str(path), *(["--quick"] if quick else [])]
    start = time.perf_counter()
    try:
        result = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env={**os.environ, **QUIET_ENV},
            cwd=path.parent,
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout or ""  # bytes even with text=True on some Python versions
        if isinstance(out, bytes):
            out = out.decode(errors="replace")
        return Outcome(path.name, f"failed (timeout {timeout_s:.0f} s)", timeout_s, out)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        tail = "\n".join(result.stderr.strip().splitlines()[-15:])
        output = "\n".join(part for part in (result.stdout.rstrip(), tail) if part)
        return Outcome(path.name, f"failed (exit {result.returncode})", seconds, output)
    return Outcome(path.name, "ok", seconds, result.stdout)


def _markdown(outcomes: list[Outcome], before: str, after: str, quick: bool) -> str:
    when = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"# Benchmarks, {when} ({'--quick' if quick else 'full sizes'})",
        "",
        f"- before: {before}",
        f"- after: {after}",
        "",
        "| script | status | seconds |",
        "|---|---|---|",
    ]
    lines += [f"| `{o.script}` | {o.status} | {o.seconds:.0f} |" for o in outcomes]
    for outcome in outcomes:
        if outcome.output:
            lines += ["", f"## {outcome.script}", "", "```text", outcome.output.rstrip(), "```"]
    return "\n".join(lines) + "\n"


def update_docs(docs: list[Path], outcomes: list[Outcome], date: str) -> bool:
    """Merge the doc tables of the scripts that passed into ``docs``; ``False`` on an error."""
    tables: dict[str, Table] = {}
    ok, used = True, set()
    print("\n=== docs ===")
    for outcome in outcomes:
        if outcome.status != "ok":
            continue
        for name, table in printed_tables(outcome.output):
            known = tables.setdefault(name, Table(table.header))
            if known.header != table.header:  # two blocks disagree on a shared table's columns
                print(f"{outcome.script}: table {name!r} not used, its columns differ")
                ok = False
                continue
            known.rows += table.rows
    for doc in docs:
        result = update_doc(doc.read_bytes().decode("utf-8"), tables, date)  # keeps \r\n
        if result.error is not None:
            print(f"{doc}: not written, {result.error}")
            ok = False
            continue
        if result.updated:
            doc.write_bytes(result.text.encode("utf-8"))
        used.update(result.updated)
        print(f"{doc}: {', '.join(result.updated) or 'no table measured in this run'}")
    for name in sorted(set(tables) - used):
        print(f"printed but in no doc: {name}")
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="every script at its smoke size")
    parser.add_argument(
        "--only", action="append", default=[], metavar="SCRIPT", help="run this script only"
    )
    parser.add_argument("--out", type=Path, help="also write the report as Markdown here")
    parser.add_argument(
        "--dir", type=Path, default=HERE, help="where the bench_*.py scripts are (default: here)"
    )
    parser.add_argument(
        "--timeout", type=float, default=3600.0, help="seconds one script may take (default 3600)"
    )
    parser.add_argument(
        "--update-docs", action="store_true", help="merge the measured doc tables into the docs"
    )
    parser.add_argument(
        "--doc",
        action="append",
        type=Path,
        default=[],
        metavar="PATH",
        help="a doc --update-docs updates (default: README.md and docs/pages/benchmarks.md)",
    )
    args = parser.parse_args(argv)
    if args.update_docs and args.quick:
        parser.error("--update-docs writes full-size measurements only; drop --quick")
    docs = args.doc or [HERE.parent / "README.md", HERE.parent / "docs" / "pages" / "benchmarks.md"]
    missing = [str(doc) for doc in docs if not doc.is_file()] if args.update_docs else []
    if missing:
        parser.error(f"no such doc to update: {', '.join(missing)}")
    args.dir = args.dir.resolve()  # each script runs with its own directory as the cwd
    scripts = sorted(args.dir.glob("bench_*.py"))
    if args.only:
        known = {path.name: path for path in scripts}
        unknown = [name for name in args.only if name not in known]
        if unknown:
            parser.error(f"no such benchmark in {args.dir}: {', '.join(unknown)}")
        scripts = [known[name] for name in args.only]
    before = _machine()
    outcomes = []
    for path in scripts:
        print(f"\n=== {path.name} ===", flush=True)
        outcome = run_script(path, args.quick, args.timeout)
        print(outcome.output.rstrip() or outcome.status, flush=True)
        outcomes.append(outcome)
    after = _machine()
    print("\n=== summary ===")
    print(f"before: {before}\nafter:  {after}")
    for outcome in outcomes:
        print(f"{outcome.script:<28} {outcome.status:<40} {outcome.seconds:6.0f} s")
    if args.out is not None:
        args.out.write_text(_markdown(outcomes, before, after, args.quick), encoding="utf-8")
    docs_ok = True
    if args.update_docs:
        docs_ok = update_docs(docs, outcomes, dt.datetime.now(dt.UTC).strftime("%Y-%m-%d"))
    failed = any(o.status.startswith("failed") for o in outcomes)
    return 1 if failed or not docs_ok else 0


if __name__ == "__main__":
    sys.exit(main())
