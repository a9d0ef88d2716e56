"""A sweep as a Slurm job array (submitit) on the real local Slurm gives the same tables as a local run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

STUDY = """\
name: pi-slurm
scenario: montecarlo-pi
set: {simulation.fidelity: analytical}
axes:
  - grid: {cluster.gpus: [1, 2, 4, 8]}
"""


def _sweep(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "clustersim", "sweep", *args, "--json", "--no-progress"],
                          capture_output=True, text=True, env=env, timeout=600)


def test_slurm_job_array_matches_local(local_slurm, tmp_path: Path):
    pytest.importorskip("submitit")
    study = tmp_path / "study.yaml"
    study.write_text(STUDY)
    r = _sweep([str(study), "-o", str(tmp_path / "local"), "--executor", "local", "--max-jobs", "2"])
    assert r.returncode == 0, r.stderr
    r = _sweep([str(study), "-o", str(tmp_path / "slurm"), "--executor", "slurm", "--max-jobs", "2",
                "--partition", local_slurm.partition], env=local_slurm.env)
    logs = "".join(p.read_text()[-1500:] for p in (tmp_path / "slurm" / "slurm").rglob("*.err")) \
        if (tmp_path / "slurm" / "slurm").exists() else ""
    assert r.returncode == 0, f"{r.stderr}\n{logs}"
    d = json.loads(r.stdout)
    assert d["evaluated"] == 4 and d["failed"] == 0
    for name in ("results.csv", "results.parquet"):
        assert (tmp_path / "slurm" / name).read_bytes() == (tmp_path / "local" / name).read_bytes(), name
    # the points ran as the tasks of one job array, at most --max-jobs at a time
    scripts = list((tmp_path / "slurm" / "slurm").rglob("*_submission.sh"))
    assert scripts, "no submitit job script"
    text = scripts[0].read_text()
    assert "#SBATCH --array=0-3%2" in text
