"""sbatch rendering: golden files, safe quoting (run with stub srun/scontrol), validation, job ids."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from clustersim.calibration.slurm import (
    SbatchSpec,
    parse_env,
    parse_job_id,
    parse_scontrol_job,
    render_sbatch,
    sbatch_quote,
    split_args,
)
from clustersim.errors import ClusterSimError

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden"

CASES = {
    "sbatch_srun_h200x2.sh": SbatchSpec(nodes=1, gpus_per_node=2, partition="gpu", time="00:30:00",
                                        job_name="calib-h200x2", output_dir="/scratch/calib/h200x2",
                                        python="/opt/venv/bin/python"),
    "sbatch_srun_2x8_env.sh": SbatchSpec(nodes=2, gpus_per_node=8, partition="h100", account="proj 42",
                                         time="1-00:00:00", job_name='cal "two" nodes', output_dir="/scratch/my runs",
                                         env={"NCCL_DEBUG": "INFO", "NCCL_IB_HCA": "mlx5_0:1,mlx5_1:1"},
                                         bench_args=["--sizes", "1KiB:1GiB", "--scopes", "world,intra"],
                                         python="python3", cpus_per_task=12, mem="500G"),
    "sbatch_torchrun_2x4.sh": SbatchSpec(nodes=2, gpus_per_node=4, launcher="torchrun", job_name="calib-torchrun",
                                         output_dir="runs/tr", python="python3", env={"NCCL_NVLS_ENABLE": "1"},
                                         bench_args=["--nvls", "on"]),
    "sbatch_cpu_quick.sh": SbatchSpec(nodes=1, gpus_per_node=0, tasks_per_node=2, device="cpu", quick=True,
                                      job_name="calib-cpu", output_dir="/tmp/calib", python="python3", time="10"),
}


REPO = Path(__file__).resolve().parents[2]
#: The example scripts shipped in calibrate/slurm/ and the options that render them.
SHIPPED = {
    "h200x2.sbatch": SbatchSpec(nodes=1, gpus_per_node=2, job_name="calib-h200x2", time="01:00:00",
                                output_dir="runs/h200x2", python="python3"),
    "multinode-2x8-torchrun.sbatch": SbatchSpec(nodes=2, gpus_per_node=8, launcher="torchrun", time="02:00:00",
                                                job_name="calib-2x8", output_dir="runs/2x8",
                                                bench_args=["--scopes", "world,intra"], python="python3"),
    "cpu-smoke.sbatch": SbatchSpec(nodes=1, gpus_per_node=0, tasks_per_node=2, device="cpu", quick=True, time="10",
                                   job_name="calib-cpu-smoke", output_dir="calibrate-cpu-smoke", python="python3"),
}


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_examples(name):
    path = REPO / "calibrate" / "slurm" / name
    text = render_sbatch(SHIPPED[name])
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert path.read_text() == text
    assert subprocess.run(["bash", "-n", str(path)]).returncode == 0


def test_every_shipped_example_is_tested():
    assert sorted(p.name for p in (REPO / "calibrate" / "slurm").glob("*.sbatch")) == sorted(SHIPPED)


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden(name):
    text = render_sbatch(CASES[name])
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert text == path.read_text(), f"rendering changed; review and regenerate with UPDATE_GOLDEN=1 ({path})"


def test_golden_contents_make_sense():
    t = (GOLDEN / "sbatch_srun_2x8_env.sh").read_text()
    assert "#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=8\n#SBATCH --gpus-per-node=8\n" in t
    assert '#SBATCH --job-name="cal \\"two\\" nodes"' in t and '#SBATCH --account="proj 42"' in t
    assert "export NCCL_NVLS_ENABLE=0\n" in t and "export NCCL_IB_HCA=mlx5_0:1,mlx5_1:1\n" in t
    assert "srun --mpi=pmix --ntasks-per-node=8" in t and "'/scratch/my runs/results.jsonl'" in t
    tr = (GOLDEN / "sbatch_torchrun_2x4.sh").read_text()
    assert "#SBATCH --ntasks-per-node=1" in tr and "--nproc-per-node=4" in tr and "export NCCL_NVLS_ENABLE=1" in tr
    assert "NCCL_NVLS_ENABLE" not in (GOLDEN / "sbatch_cpu_quick.sh").read_text()
    assert "--exclusive" not in (GOLDEN / "sbatch_cpu_quick.sh").read_text()


def _stub(bin_dir: Path, name: str, body: str) -> None:
    p = bin_dir / name
    p.write_text("#!/bin/bash\n" + body)
    p.chmod(0o755)


@pytest.mark.parametrize("launcher", ["srun", "torchrun"])
def test_hostile_values_stay_data(tmp_path, launcher):
    """Run the rendered script with stub srun/scontrol: every value arrives verbatim and nothing injected runs."""
    marker = tmp_path / "pwned"
    evil = f"x'; touch {marker}; echo '$(touch {marker}) `touch {marker}` \"q\" \\ $HOME"
    out_dir = tmp_path / f"out {evil[:12]}"
    spec = SbatchSpec(nodes=1, gpus_per_node=2, launcher=launcher, job_name=evil, partition=evil, account=evil,
                      output_dir=str(out_dir), env={"EVIL": evil}, bench_args=["--run-id", evil],
                      python=str(tmp_path / "py thon"))
    script = tmp_path / "job.sh"
    script.write_text(render_sbatch(spec))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    argv = tmp_path / "argv"
    _stub(bin_dir, "srun", f'printf "%s\\0" "$@" > {argv}\nprintf "%s" "$EVIL" > {tmp_path / "env"}\n')
    _stub(bin_dir, "scontrol", 'echo node-a\necho node-b\n')
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "SLURM_JOB_ID": "77",
           "SLURM_JOB_NODELIST": "node-[a-b]", "SLURM_JOB_NUM_NODES": "1"}
    res = subprocess.run(["bash", str(script)], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert not marker.exists()
    args = argv.read_bytes().split(b"\0")[:-1]
    args = [a.decode() for a in args]
    assert (tmp_path / "env").read_text() == evil
    assert str(tmp_path / "py thon") in args
    assert args[args.index("--run-id") + 1] == evil
    assert args[args.index("-o") + 1] == str(out_dir / "results.jsonl")
    assert out_dir.is_dir()
    if launcher == "torchrun":
        assert "--rdzv-endpoint=node-a:20077" in args and "--rdzv-id=77" in args and "--nnodes=1" in args
    else:
        assert args[:2] == ["--mpi=pmix", "--ntasks-per-node=2"]


@pytest.mark.parametrize("kw,field", [
    ({"job_name": "a\nb"}, "--job-name"),
    ({"output_dir": "x\r"}, "--output-dir"),
    ({"env": {"A": "1\n2"}}, "--env A"),
    ({"env": {"1A": "x"}}, "--env"),
    ({"bench_args": ["a\nb"]}, "--bench-args"),
    ({"nodes": 0}, "--nodes"),
    ({"gpus_per_node": 0}, "--gpus-per-node"),
    ({"tasks_per_node": 4, "gpus_per_node": 2}, "--tasks-per-node"),
    ({"launcher": "mpirun"}, "--launcher"),
    ({"time": "1 hour"}, "--time"),
    ({"mpi": "pmix; rm"}, "--mpi"),
    ({"mem": "lots"}, "--mem"),
    ({"device": "tpu"}, "--device"),
])
def test_rejects(kw, field):
    spec = SbatchSpec(**{"python": "python3", **kw})
    with pytest.raises(ClusterSimError) as e:
        render_sbatch(spec)
    assert e.value.field == field


def test_helpers():
    assert sbatch_quote('a "b"') == '"a \\"b\\""'
    assert parse_env(["A=1", "B=x=y"]) == {"A": "1", "B": "x=y"}
    with pytest.raises(ClusterSimError):
        parse_env(["novalue"])
    assert split_args("--sizes 1KiB:1MiB --run-id 'a b'") == ["--sizes", "1KiB:1MiB", "--run-id", "a b"]
    with pytest.raises(ClusterSimError):
        split_args("'unclosed")
    assert parse_job_id("123\n") == "123" and parse_job_id("55;cluster\n") == "55"
    with pytest.raises(ClusterSimError):
        parse_job_id("sbatch: error: bad")
    st = parse_scontrol_job("JobId=7 JobName=a b c UserId=root(0) JobState=COMPLETED Reason=None ExitCode=0:0 "
                            "Comment=clustersim results=/x y/results.jsonl StdOut=/x y/slurm-7.out WorkDir=/w", "7")
    assert (st.job_name, st.state, st.exit_code, st.std_out, st.work_dir) == ("a b c", "COMPLETED", "0:0", "/x y/slurm-7.out", "/w")
    assert st.results == "/x y/results.jsonl"


def test_cli_prints_and_rejects(tmp_path, cli):
    slurm = ["calibrate", "slurm"]
    res = cli(*slurm, "--nodes", "1", "--gpus-per-node", "2", "--job-name", "calib-h200x2", "--partition",
              "gpu", "--time", "00:30:00", "--output-dir", "/scratch/calib/h200x2", "--python",
              "/opt/venv/bin/python")
    assert res.returncode == 0, res.stderr
    assert res.stdout == (GOLDEN / "sbatch_srun_h200x2.sh").read_text()
    res = cli(*slurm, "--job-name", "a\nb")
    assert res.returncode == 2 and "--job-name" in res.stderr and "Traceback" not in res.stderr
