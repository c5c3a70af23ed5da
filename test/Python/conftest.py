"""Fixtures of the Python tests: the repository, the build's tools and a
synthetic trace. scripts/test.sh runs them with PYTHONPATH=build/python;
NETVM_BUILD_DIR names another build tree."""

import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("NETVM_BUILD_DIR", ROOT / "build"))
BIN = BUILD / "bin"
INPUTS = pathlib.Path(__file__).resolve().parent / "Inputs"
EXAMPLES = ROOT / "examples"


def tool(name: str) -> str:
    path = BIN / name
    if not path.exists():
        pytest.skip(f"{path} is not built")
    return str(path)


def run_tool(name: str, *args) -> str:
    """Run a netvm tool; its standard output (fails the test on error)."""
    done = subprocess.run([tool(name), *map(str, args)], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="session")
def trace(tmp_path_factory) -> pathlib.Path:
    """3000 packets of netvm-pcapgen: every protocol it makes, with runts
    and truncated captures."""
    path = tmp_path_factory.mktemp("trace") / "gen.pcap"
    run_tool("netvm-pcapgen", "-n", 3000, "--seed", 11, "--malformed", 5,
             "-o", path)
    return path


@pytest.fixture(scope="session")
def mixed() -> pathlib.Path:
    return EXAMPLES / "traces" / "mixed.pcap"
