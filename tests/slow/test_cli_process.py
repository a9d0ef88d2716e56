"""The real ``python -m clustersim`` process: exit codes and streams as a shell sees them.

The unit tests run the command line in-process (``tests/cli_inprocess.py``); these few start the
interpreter, about a second each. Moved from tests/unit/test_cli_basic.py, test_topology_cli.py and
test_report.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_inprocess import clustersim

pytestmark = pytest.mark.slow

DATA = Path(__file__).resolve().parents[1] / "data" / "h200x2"
NT_LOG = DATA / "nt_all_reduce.txt"


def process(*args, cwd=None):
    """``python -m clustersim ARGS`` in a new interpreter."""
    return subprocess.run([sys.executable, "-m", "clustersim", *args], capture_output=True, text=True, cwd=cwd, timeout=120)


@pytest.fixture()
def fitted(tmp_path):
    """An nccl-tests log as contract-3 rows and the profile ``calibrate fit --holdout odd`` makes of it
    (tests/unit/test_report.py's fixture)."""
    from clustersim.calibration.nccl_tests import parse_nccl_tests_log

    src = tmp_path / "ar.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in parse_nccl_tests_log(str(NT_LOG), warn=None)))
    prof = tmp_path / "p.yaml"
    r = clustersim("calibrate", "fit", str(src), "-o", str(prof), "--holdout", "odd", "--topology", "hgx-h200")
    assert r.returncode == 0, r.stderr
    return src, prof


def test_version_and_help():
    r = process("--version")
    assert r.returncode == 0 and r.stdout.startswith("clustersim ")
    r = process("--help")
    assert r.returncode == 0 and "Examples" in r.stdout


def test_real_process_exit_code(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("name: t\n")
    r = subprocess.run([sys.executable, "-m", "clustersim", "topo", "show", str(p)], capture_output=True, text=True,
                       timeout=120)
    err = " ".join(r.stderr.split())
    assert r.returncode == 2 and "bad.yaml: gpu: required field is missing" in err and "Traceback" not in err
    r = subprocess.run([sys.executable, "-m", "clustersim", "topo", "show", "dgx-h100", "--json"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and json.loads(r.stdout)["gpus"] == 8


def test_real_cli_entry_point(fitted):
    """`python -m clustersim calibrate report|fit` in a real process (exit code 2 on a user error)."""
    src, prof = fitted
    r = subprocess.run([sys.executable, "-m", "clustersim", "calibrate", "report", str(src), "--profile", str(prof),
                        "--json"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    json.loads(r.stdout)
    r = subprocess.run([sys.executable, "-m", "clustersim", "calibrate", "fit", "/nonexistent.jsonl", "-o", "x.yaml"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "file not found" in r.stderr and "Traceback" not in r.stderr
