"""pytest plugin (entry point ``pytest11``): regression cases as test items.

``pytest --agentledger-cases DIR --agentledger-agent MOD:FACTORY --agentledger-tools MOD:TOOLS``
adds one item ``test_case[<case_id>]`` per case file (``docs/design/cases.md``). Loaded in
every pytest run of a project that installs agentledger, it stays inert without
``--agentledger-cases``: pytest alone at import, LangChain only when cases run.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from agentledger.cases import __all__ as _CASES_API
from agentledger.protocol import LedgerError

if TYPE_CHECKING:
    from agentledger.cases._model import Case
    from agentledger.cases._target import RunTarget

__all__ = [
    "LIBRARY_NAMES",
    "CaseFailed",
    "CaseItem",
    "pytest_addoption",
    "pytest_collection_modifyitems",
    "pytest_unconfigure",
]

_STATE = pytest.StashKey["_Shared"]()


class CaseFailed(LedgerError, AssertionError):
    """A case missed a ``min_pass_rate``; the message names checks, expected and actual."""


def pytest_addoption(parser: pytest.Parser) -> None:
    """Options of the ``agentledger`` group (all inert unless ``--agentledger-cases``)."""
    group = parser.getgroup("agentledger", "agentledger regression cases")
    group.addoption(
        "--agentledger-cases", metavar="DIR", help="Run the case files in DIR as tests."
    )
    group.addoption(
        "--agentledger-agent", metavar="MODULE:FACTORY", help="Candidate: factory(stub_tools)."
    )
    group.addoption("--agentledger-tools", metavar="MODULE:TOOLS", help="The real tools (list).")
    group.addoption("--agentledger-runs", type=int, default=1, help="Runs per case (default 1).")
    group.addoption("--agentledger-url", help="Log runs to this server (default: embedded).")
    group.addoption("--agentledger-api-key", help="API key for --agentledger-url.")
    group.addoption(
        "--agentledger-min-pass-rate",
        type=float,
        default=None,
        help="Rate for non-safety checks that set none (0..1).",
    )


class _Shared:
    """Per test session: the loaded factory/tools and one ledger target, opened lazily."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.stack = contextlib.ExitStack()
        self.target: RunTarget | None = None
        self.factory: Any = None
        self.tools: list[Any] | None = None

    def prepare(self) -> RunTarget:
        from agentledger.cases._runner import load_object
        from agentledger.cases._target import ledger_target

        opt = self.config.getoption
        if self.factory is None:
            agent = opt("--agentledger-agent")
            tools = opt("--agentledger-tools")
            if not agent or not tools:
                raise pytest.UsageError(
                    "--agentledger-cases needs --agentledger-agent and --agentledger-tools"
                )
            self.factory = load_object(agent, "--agentledger-agent")
            loaded = load_object(tools, "--agentledger-tools")
            self.tools = list(loaded() if callable(loaded) else loaded)
        if self.target is None:
            self.target = self.stack.enter_context(
                ledger_target(opt("--agentledger-url"), opt("--agentledger-api-key"))
            )
        return self.target


class CaseItem(pytest.Item):
    """One case file as a test item (``test_case[<case_id>]``)."""

    def __init__(self, *, case_path: Path, case: Case | None, error: str | None, **kw: Any):
        super().__init__(**kw)
        self.case_path = case_path
        self.case = case
        self.load_error = error

    def runtest(self) -> None:
        """Run the case N times; raise :class:`CaseFailed` when the gate fails."""
        if self.load_error is not None:
            raise CaseFailed(self.load_error)
        assert self.case is not None
        from agentledger.cases._runner import run_suite

        shared = self.config.stash[_STATE]
        target = shared.prepare()
        report = run_suite(
            [(self.case_path, self.case)],
            factory=shared.factory,
            tools=shared.tools or [],
            target=target,
            runs=int(self.config.getoption("--agentledger-runs")),
            default_min_pass_rate=self.config.getoption("--agentledger-min-pass-rate"),
        )
        case_report = report.cases[0]
        self.user_properties.append(("pass_rate", case_report.passed_runs / len(case_report.runs)))
        if case_report.flaky:
            self.user_properties.append(("flaky", True))
        if not case_report.gate_passed:
            raise CaseFailed(case_report.failure_message())

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> str | Any:
        """The case's failure text (no traceback) for :class:`CaseFailed`."""
        if isinstance(excinfo.value, CaseFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int, str]:
        """Where the case is: its file."""
        return self.case_path, 0, f"agentledger case {self.name}"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """Add one :class:`CaseItem` per case file (only with ``--agentledger-cases``)."""
    directory = config.getoption("--agentledger-cases", default=None)
    if not directory:
        return
    from agentledger.cases._model import CaseError, load_case

    config.stash[_STATE] = _Shared(config)
    root = Path(directory)
    files = [root] if root.is_file() else sorted(root.rglob("*.json"))
    if not files:
        raise pytest.UsageError(f"--agentledger-cases {directory}: no *.json case files")
    suite = pytest.Dir.from_parent(session, path=root if root.is_dir() else root.parent)
    for path in files:
        case: Case | None
        try:
            case = load_case(path)
            error = None
            name = case.case_id
        except CaseError as problem:
            case, error, name = None, str(problem), path.stem
        items.append(
            CaseItem.from_parent(
                suite, name=f"test_case[{name}]", case_path=path, case=case, error=error
            )
        )


def pytest_unconfigure(config: pytest.Config) -> None:
    """Stop the embedded ledger, if one was started."""
    shared = config.stash.get(_STATE, None)
    if shared is not None:
        shared.stack.close()


#: The library API re-exported from :mod:`agentledger.cases` on first use (the
#: same names as its ``__all__``; pytest probes module attributes such as ``pytest_plugins``,
#: which must not import anything).
LIBRARY_NAMES = frozenset(_CASES_API)


def __getattr__(name: str) -> Any:
    """The library API (``check``, ``Case``, ``StubRegistry``...), imported on first use."""
    if name not in LIBRARY_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from agentledger import cases

    return getattr(cases, name)
