"""The distribution is laid out right: one wheel, three source roots, one PEP 420 namespace.

A non-editable ``pip install`` of the built wheel into a fresh venv must import
``agentledger.client`` and ``agentledger.server`` from that venv (not from the checkout), ship
the migrations and ``py.typed``, and install the ``agentledger`` console script.
Dependencies are taken from the test environment via ``PYTHONPATH`` (``.pth`` files there,
such as the editable install's, are not processed for ``PYTHONPATH`` entries), so the test
needs no network and checks only what the wheel itself carries.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(out),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    (found,) = out.glob("agentledger-*.whl")
    return found


def test_wheel_contents(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "agentledger/__init__.py" not in names, "agentledger must stay a PEP 420 namespace"
    for required in (
        "agentledger/client/__init__.py",
        "agentledger/client/py.typed",
        "agentledger/server/__init__.py",
        "agentledger/integrations/py.typed",
        "agentledger/cli/__init__.py",
        "agentledger/cli/py.typed",
        "agentledger/cases/pytest_plugin.py",
        "agentledger/cases/py.typed",
        "agentledger/mcp_server/py.typed",
        "agentledger/mcp_proxy/py.typed",
        "agentledger/testing/py.typed",
        "agentledger/demo/py.typed",
        "agentledger/timeline/py.typed",
        "agentledger/server/_ui/templates/session.html",
        "agentledger/server/_ui/static/dashboard.js",
    ):
        assert required in names, f"{required} missing from the wheel"
    assert any(n.startswith("agentledger/server/") and "migrations" in n for n in names), (
        "server migrations are not shipped in the wheel"
    )
    assert not any(
        n.startswith(("core_client/", "server/", "integrations/", "tests/")) for n in names
    ), "source-root folder names leaked into site-packages"


def test_wheel_installs_and_imports_in_fresh_venv(wheel: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--no-deps",
            "-q",
            str(wheel),
        ],
        check=True,
        capture_output=True,
    )
    deps = sysconfig.get_paths()["purelib"]
    env = {**os.environ, "PYTHONPATH": deps}
    probe = (
        "import json, agentledger.client, agentledger.server;"
        "print(json.dumps([agentledger.client.__file__, agentledger.server.__file__]))"
    )
    out = subprocess.run(
        [str(python), "-c", probe], check=True, capture_output=True, text=True, env=env
    )
    client_file, server_file = json.loads(out.stdout)
    assert Path(client_file).is_relative_to(env_dir), client_file
    assert Path(server_file).is_relative_to(env_dir), server_file
    script = env_dir / "bin" / "agentledger"
    assert script.exists()
    helped = subprocess.run([str(script), "--help"], capture_output=True, text=True, env=env)
    assert helped.returncode == 0, helped.stderr
    assert "serve" in helped.stdout


def test_editable_install_maps_the_three_source_roots() -> None:
    # The test environment installs the checkout editable (nox: ``pip install -e``).
    import agentledger.server

    client_path = Path(agentledger.client.__file__).resolve()
    assert client_path.is_relative_to(ROOT / "core_client"), client_path
    assert Path(agentledger.server.__file__).resolve().is_relative_to(ROOT / "server")
    roots = {Path(p).resolve().parent.name for p in agentledger.__path__}
    assert roots == {"core_client", "server", "integrations"}, roots
