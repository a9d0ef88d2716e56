"""``clustersim collective``: the plot against a measured log and a fresh interpreter that imports the band without
torch (moved from tests/unit/test_collective_cli.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from clustersim.cli import app

pytestmark = pytest.mark.slow

DATA = Path(__file__).resolve().parents[1] / "data"

runner = CliRunner()


def run(*args):
    return runner.invoke(app, list(args))


def test_plot_with_measured_log(tmp_path):
    out = tmp_path / "bw.png"
    r = run("collective", "all_reduce", "--topology", "hgx-h200", "--gpus", "2", "--sizes", "8:4GiB",
            "--plot", str(out), "--measured", str(DATA / "h200x2" / "nt_all_reduce.txt"))
    assert r.exit_code == 0, r.output
    assert out.stat().st_size > 1000


def test_uncertainty_imports_without_torch():
    import subprocess
    import sys

    code = "import sys, clustersim.collectives.uncertainty, clustersim.cli.collective; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
