"""``benchmarks/run_all.py``, the one entry point of the benchmarks page ("Benchmarks", first
paragraph): every script in turn, its table as printed, a summary, a Markdown report; a
failing script is reported and the others still run; a missing prerequisite is a skip with a
reason. Real subprocesses throughout (real benchmark scripts, and small scripts written here
for the failure paths)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

RUN_ALL = Path(__file__).resolve().parents[2] / "benchmarks" / "run_all.py"


def _run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(RUN_ALL), *args], capture_output=True, text=True, timeout=timeout
    )


def test_real_scripts_print_their_tables_and_the_report_holds_them(tmp_path: Path) -> None:
    report = tmp_path / "report.md"
    result = _run(
        "--quick", "--only", "bench_verify.py", "--only", "bench_redaction.py", "--out", str(report)
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    for row in ("tried: compare the columns in SQL", "redact(), every pattern"):
        assert row in result.stdout
        assert row in report.read_text()
    text = report.read_text()
    assert "| `bench_verify.py` | ok |" in text and "| `bench_redaction.py` | ok |" in text
    assert "load average" in text and "SQLite" in text
    assert text.index("## bench_verify.py") < text.index("## bench_redaction.py")


def test_a_failing_script_is_reported_and_the_others_still_run(tmp_path: Path) -> None:
    (tmp_path / "bench_a_broken.py").write_text(
        'import sys\nprint("half a table")\nsys.exit("boom: the server did not start")\n'
    )
    (tmp_path / "bench_b_fine.py").write_text('print("| row | 1.0x |")\n')
    result = _run("--dir", str(tmp_path), "--out", str(tmp_path / "r.md"))
    assert result.returncode == 1
    assert "half a table" in result.stdout and "boom: the server did not start" in result.stdout
    assert "| row | 1.0x |" in result.stdout
    text = (tmp_path / "r.md").read_text()
    assert "| `bench_a_broken.py` | failed (exit 1) |" in text
    assert "| `bench_b_fine.py` | ok |" in text


def test_a_script_over_its_time_is_stopped_and_reported(tmp_path: Path) -> None:
    (tmp_path / "bench_slow.py").write_text(
        'import time\nprint("first row", flush=True)\ntime.sleep(30)\n'
    )
    result = _run("--dir", str(tmp_path), "--timeout", "2", timeout=25)
    assert result.returncode == 1
    assert "failed (timeout 2 s)" in result.stdout
    assert "first row" in result.stdout


@pytest.mark.skipif(
    importlib.util.find_spec("crewai") is not None, reason="CrewAI is installed here"
)
def test_a_missing_prerequisite_is_a_skip_that_says_why(tmp_path: Path) -> None:
    (tmp_path / "bench_crewai.py").write_text('raise SystemExit("must not run")\n')
    result = _run("--dir", str(tmp_path))
    assert result.returncode == 0, result.stdout
    assert "skipped: needs crewai installed" in result.stdout


def test_an_unknown_script_is_refused_by_name() -> None:
    result = _run("--only", "bench_nope.py")
    assert result.returncode == 2
    assert "no such benchmark" in result.stderr and "bench_nope.py" in result.stderr
