"""The shipped hgx-h200 kernel tables are what ``calibrate fit`` makes of the H200 bench and kernel rows (moved
from tests/unit/test_fit_kernels.py): every kernel class fitted."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from cli_inprocess import clustersim

from clustersim.collectives.profiles import resolve_profile

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
MEAS = ROOT / "profiles" / "measurements"
TABLES = ("attention_table", "gemm_layout_table", "memory_table", "clock_table", "expert_gemm_table", "grouped_gemm_table",
          "fp8_layout_table")


def test_fit_reproduces_the_shipped_kernel_tables(tmp_path):
    """The H200 bench (GEMM, HBM, launch rows) and its kernel rows through the CLI give the same four tables as the
    shipped hgx-h200 profile, which profiles/make_profiles.py builds from the same two files."""
    # the bench's collective rows are NCCL-level: the fit names the topology they were measured on (issue 36)
    r = clustersim("calibrate", "fit", str(MEAS / "h200x2" / "bench-run1.jsonl"), str(MEAS / "h200" / "kernels.jsonl"),
                   str(MEAS / "h200" / "kernels-fp8-20261202.jsonl"), str(MEAS / "h200" / "kernels-experts-20261202.jsonl"),
                   "-o", str(tmp_path / "p.yaml"), "--topology", "hgx-h200", cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert "kernel classes: 40 flash-attention, 180 layout GEMM" in r.stdout
    fitted = yaml.safe_load((tmp_path / "p.yaml").read_text())["compute"]
    shipped = resolve_profile("hgx-h200").compute.model_dump(mode="json", exclude_none=True)
    for key in TABLES:
        assert fitted[key] == shipped[key], key
