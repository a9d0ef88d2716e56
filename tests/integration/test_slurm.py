"""The calibration job end to end on a real local Slurm: render, sbatch, srun --mpi=pmix, rank discovery, results, fit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from clustersim.calibration.bench import OPS
from clustersim.calibration.slurm import parse_scontrol_job

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

CLI = [sys.executable, "-m", "clustersim"]
SIZES = [1024, 4096, 16384, 65536]  # the --quick preset


def _cli(args: list[str], env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(CLI + args, capture_output=True, text=True, env=env, timeout=timeout)


def test_calibration_job_end_to_end(local_slurm, tmp_path: Path) -> None:
    out_dir = tmp_path / "run dir"  # a space in the path: quoting is exercised too
    marker = tmp_path / "injected"
    job_name = f'calib "q" \'s\' $(touch {marker}) `touch {marker}`; touch {marker}'
    res = _cli(["calibrate", "slurm", "--submit", "--wait", "--wait-timeout", "240", "--nodes", "1",
                "--gpus-per-node", "0", "--tasks-per-node", "2", "--device", "cpu", "--quick",
                "--job-name", job_name, "--output-dir", str(out_dir), "--time", "10",
                "--bench-args", "--no-progress --ops " + ",".join(OPS)], local_slurm.env)
    job_line = next((l for l in res.stdout.splitlines() if l.startswith("submitted job ")), "")
    job_id = job_line.split()[2] if job_line else None
    log = ""
    if job_id and (out_dir / f"slurm-{job_id}.out").exists():
        log = (out_dir / f"slurm-{job_id}.out").read_text()
    assert res.returncode == 0, f"stdout:\n{res.stdout}\nstderr:\n{res.stderr}\njob log:\n{log[-3000:]}"
    assert job_id and job_id.isdigit()

    # the job name arrived verbatim and nothing in it ran
    assert not marker.exists()
    show = subprocess.run(["scontrol", "show", "job", "-o", job_id], capture_output=True, text=True, env=local_slurm.env)
    st = parse_scontrol_job(show.stdout, job_id)
    assert st.state == "COMPLETED"
    assert st.job_name == job_name
    assert st.results == str(out_dir / "results.jsonl")

    # --status prints the state and where the results are
    res = _cli(["calibrate", "slurm", "--status", job_id], local_slurm.env)
    assert res.returncode == 0, res.stderr
    assert "COMPLETED" in res.stdout and "results.jsonl" in res.stdout

    rows = [json.loads(l) for l in (out_dir / "results.jsonl").read_text().splitlines() if l.strip()]
    meta = [r for r in rows if r["kind"] == "meta"]
    assert len(meta) == 1 and rows[0]["kind"] == "meta"
    m = meta[0]
    # rank discovery inside the job: Slurm variables under srun --mpi=pmix, two ranks
    assert m["launcher"] == "slurm" and m["pmix"] is True and m["job_id"] == job_id
    assert m["world_size"] == 2 and len(m["rank_hosts"]) == 2 and m["backend"] == "gloo"
    init = [r for r in rows if r["kind"] == "comm_init"]
    assert len(init) == 1 and init[0]["ranks"] == 2 and init[0]["time_s"] > 0
    coll = [r for r in rows if r["kind"] == "collective"]
    for op in OPS:
        for mode in ("nccl", "framework"):
            got = sorted(r["size_bytes"] for r in coll if r["op"] == op and r["mode"] == mode)
            assert got == SIZES, (op, mode, got)
    for r in coll:
        assert r["ranks"] == 2 and r["scope"] == "intra" and r["run_id"] == m["run_id"]
        # times are the mean over both ranks; the slowest rank can only be slower
        assert 0 < r["time_us_min"] <= r["time_us"] <= r["time_us_p90"] * 1.0000001
        assert r["time_us_rank_max"] >= r["time_us_min"]
        assert r["algbw_GBps"] == pytest.approx(r["size_bytes"] / (r["time_us"] * 1e3), rel=1e-9)

    # then fit, when the fit command is there
    help_res = _cli(["calibrate", "fit", "--help"], local_slurm.env)
    if help_res.returncode == 0:
        prof = tmp_path / "profile.yaml"
        # a CPU has no GPU spec to take the GEMM peak from: give one (1 TFLOP/s, above what 2 cores reach)
        res = _cli(["calibrate", "fit", str(out_dir / "results.jsonl"), "-o", str(prof), "--peak-tflops", "1"],
                   local_slurm.env)
        assert res.returncode == 0, res.stdout + res.stderr
        assert prof.exists() and prof.stat().st_size > 0


def test_torchrun_launcher_job(local_slurm, tmp_path: Path) -> None:
    """--launcher torchrun: one torchrun per node (c10d rendezvous on the first host) starts the two ranks."""
    out_dir = tmp_path / "tr"
    res = _cli(["calibrate", "slurm", "--submit", "--wait", "--wait-timeout", "240", "--launcher", "torchrun",
                "--nodes", "1", "--gpus-per-node", "0", "--tasks-per-node", "2", "--device", "cpu", "--quick",
                "--job-name", "calib-torchrun", "--output-dir", str(out_dir), "--time", "10",
                "--bench-args", "--no-progress --no-gemm --ops all_reduce,send_recv --modes nccl"], local_slurm.env)
    logs = "".join(p.read_text()[-3000:] for p in out_dir.glob("slurm-*.out"))
    assert res.returncode == 0, f"{res.stdout}\n{res.stderr}\n{logs}"
    rows = [json.loads(l) for l in (out_dir / "results.jsonl").read_text().splitlines() if l.strip()]
    meta = rows[0]
    assert meta["kind"] == "meta" and meta["launcher"] == "torchrun" and meta["world_size"] == 2
    assert meta["job_id"] and meta["job_id"].isdigit()
    coll = [r for r in rows if r["kind"] == "collective"]
    assert sorted((r["op"], r["size_bytes"]) for r in coll) == sorted(
        (op, s) for op in ("all_reduce", "send_recv") for s in SIZES)
