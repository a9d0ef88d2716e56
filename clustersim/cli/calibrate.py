"""`clustersim calibrate` commands: bench, slurm, import-nccl-tests (fit and report come from calibrate_fit)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from clustersim.errors import ClusterSimError

app = typer.Typer(
    help="Measure a real cluster (bench, slurm), import nccl-tests logs, fit profiles and report.\n\n"
    "Examples:\n\n\b\n"  # \b: click keeps the lines of this paragraph as they are (no re-wrapping)
    "  torchrun --nproc-per-node 8 -m clustersim calibrate bench -o h200.jsonl\n"
    "  clustersim calibrate slurm --nodes 2 --gpus-per-node 8 -p gpu > calib.sbatch\n"
    "  clustersim calibrate import-nccl-tests all_reduce_perf.log -o nt.jsonl\n"
    "  clustersim calibrate fit h200.jsonl -o my-profile.yaml\n"
    "  clustersim calibrate report h200.jsonl --profile my-profile.yaml -o report/",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)


def _csv(text: str | None) -> tuple[str, ...]:
    return tuple(p.strip() for p in (text or "").replace(" ", ",").split(",") if p.strip())


@app.command("bench")
def bench(
    output: Path = typer.Option(..., "-o", "--output", help="JSON-lines file rank 0 writes (appended; a re-run resumes)."),
    device: str = typer.Option("auto", "--device", help="cuda (NCCL), cpu (gloo) or auto."),
    ops: str = typer.Option(",".join(("all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all", "send_recv")),
                            "--ops", help="Comma-separated operations, or none (compute only, e.g. on one GPU)."),
    sizes: Optional[str] = typer.Option(None, "--sizes", help="Size range START:END[:xF] (nccl-tests conventions), "
                                        "default 1KiB:4GiB:x2 (quick: 1KiB:64KiB:x4)."),
    modes: str = typer.Option("nccl,eager,framework", "--modes", help="nccl (library-level: CUDA-graph replay on GPUs, like nccl-tests -G), eager (back-to-back torch.distributed calls), framework (one isolated call)."),
    framework_max: str = typer.Option("1MiB", "--framework-max-size", help="Largest size also timed in framework mode."),
    iters: Optional[int] = typer.Option(None, "--iters", help="Back-to-back calls per timed repetition (default 20; quick 5)."),
    warmup: Optional[int] = typer.Option(None, "--warmup", help="Untimed calls before timing (default 5; quick 2)."),
    reps: Optional[int] = typer.Option(None, "--reps", help="Timed repetitions per point (default 5; quick 3)."),
    framework_reps: Optional[int] = typer.Option(None, "--framework-reps", help="Isolated calls per point (default 20; quick 5)."),
    dtype: str = typer.Option("float32", "--dtype", help="Collective element type (float32, bfloat16, float16)."),
    nccl_algo: Optional[str] = typer.Option(None, "--nccl-algo", help="Set NCCL_ALGO before init (Ring, Tree, NVLS, ...)."),
    nccl_proto: Optional[str] = typer.Option(None, "--nccl-proto", help="Set NCCL_PROTO before init (LL, LL128, Simple)."),
    nvls: str = typer.Option("off", "--nvls", help="off: NCCL_NVLS_ENABLE=0 (default); on: =1; auto: NCCL's default."),
    scopes: str = typer.Option("world", "--scopes", help="world (all ranks) and/or intra (one group per host)."),
    gemm: bool = typer.Option(True, "--gemm/--no-gemm", help="GEMM sweep (rank 0)."),
    gemm_shapes: Optional[str] = typer.Option(None, "--gemm-shapes", help="M,N,K;M,N,K... (default: transformer grid)."),
    gemm_dtype: str = typer.Option("bf16", "--gemm-dtype", help="GEMM element type on GPU."),
    hbm: bool = typer.Option(True, "--hbm/--no-hbm", help="HBM copy bandwidth (GPU only)."),
    hbm_bytes: Optional[str] = typer.Option(None, "--hbm-bytes", help="Copy size (default 2GiB; quick 256MiB)."),
    launch: bool = typer.Option(True, "--launch/--no-launch", help="Kernel launch overhead (GPU only)."),
    kernels: bool = typer.Option(False, "--kernels", help="Kernel-class sweep (rank 0): SDPA attention, GEMM layouts "
                                 "(NT/NN/TN), LayerNorm/GELU/residual, cross-entropy, foreach AdamW, FP8, MoE."),
    kernel_classes: str = typer.Option("", "--kernel-classes", help="Only these classes of --kernels, comma-separated "
                                       "(attention, gemm, elementwise, eager_attention, cross_entropy, bmm, wave, "
                                       "sustained, adamw, fp8, experts)."),
    memory_fraction: float = typer.Option(0.8, "--memory-fraction", help="Skip sizes whose buffers need more of the free memory."),
    timeout: float = typer.Option(600.0, "--timeout", min=1.0, help="Seconds before a stuck rendezvous/collective fails (at least 1)."),
    run_id: Optional[str] = typer.Option(None, "--run-id", help="Run id stored in every row (default: time + random)."),
    quick: bool = typer.Option(False, "--quick", help="Small preset for tests and smoke runs."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Progress bar on stderr (rank 0)."),
) -> None:
    """Measure collectives, GEMMs, HBM and launch overhead on this job's ranks (run under torchrun or srun).

    Example: torchrun --nproc-per-node 2 -m clustersim calibrate bench -o h200x2.jsonl
    """
    from clustersim.calibration import bench as B
    from clustersim.units import parse_size, parse_size_range

    kw = dict(device=device, ops=_csv(ops), modes=_csv(modes), framework_max_bytes=parse_size(framework_max),
              dtype=dtype, nccl_algo=nccl_algo, nccl_proto=nccl_proto, nvls=nvls, scopes=_csv(scopes), gemm=gemm,
              gemm_dtype=gemm_dtype, hbm=hbm, launch=launch, kernels=kernels,
              kernel_classes=_csv(kernel_classes), memory_fraction=memory_fraction, timeout_s=timeout,
              run_id=run_id, progress=progress)
    if sizes:
        kw["sizes"] = tuple(parse_size_range(sizes))
    if gemm_shapes:
        kw["gemm_shapes"] = B.parse_gemm_shapes(gemm_shapes)
    if hbm_bytes:
        kw["hbm_bytes"] = parse_size(hbm_bytes)
    for name, val in (("iters", iters), ("warmup", warmup), ("reps", reps), ("framework_reps", framework_reps)):
        if val is not None:
            kw[name] = val
    cfg = B.quick_config(str(output), **kw) if quick else B.BenchConfig(output=str(output), **kw)
    try:
        import torch  # noqa: F401
    except ImportError:
        raise ClusterSimError("calibrate bench needs torch: pip install 'clustersim[calibrate]'") from None
    B.run_bench(cfg)


@app.command("import-nccl-tests")
def import_nccl_tests(
    logs: list[Path] = typer.Argument(..., help="nccl-tests logs (stdout of all_reduce_perf and friends)."),
    output: Path = typer.Option(..., "-o", "--output", help="JSON-lines file to append rows to."),
    op: Optional[str] = typer.Option(None, "--op", help="Operation when the header does not name it (all_reduce, alltoall_perf, ...)."),
    ranks: Optional[int] = typer.Option(None, "--ranks", help="Rank count (overrides the header's device lines)."),
    scope: Optional[str] = typer.Option(None, "--scope", help="intra or inter (overrides what the host names say)."),
    out_of_place_only: bool = typer.Option(False, "--out-of-place-only", help="One row per size (out-of-place) instead of two."),
    allow_wrong: bool = typer.Option(False, "--allow-wrong", help="Import results nccl-tests found wrong (#wrong > 0) "
                                     "with their count; by default such a log is refused."),
) -> None:
    """Turn nccl-tests logs into measurement rows (current and pre-2.13 formats, mpirun-tagged lines).

    Examples:

      clustersim calibrate import-nccl-tests all_reduce_perf.log -o nt.jsonl

      clustersim calibrate import-nccl-tests run1.log run2.log --op all_gather --ranks 16 -o nt.jsonl
    """
    from clustersim.calibration.nccl_tests import import_logs

    warnings: list[str] = []

    def warn(msg: str) -> None:
        warnings.append(msg)
        sys.stderr.write(f"warning: {msg}\n")

    counts = import_logs(list(logs), output, op=op, ranks=ranks, scope=scope,
                         placement="out" if out_of_place_only else "both", warn=warn, allow_wrong=allow_wrong)
    for name, n in counts.items():
        sys.stderr.write(f"{name}: {n} rows\n")
    sys.stderr.write(f"wrote {sum(counts.values())} collective rows to {output}"
                     + (f" ({len(warnings)} warnings)" if warnings else "") + "\n")


@app.command("slurm")
def slurm(
    nodes: int = typer.Option(1, "--nodes", help="Nodes to allocate."),
    gpus_per_node: int = typer.Option(8, "--gpus-per-node", help="GPUs per node (one task per GPU); 0 with --device cpu."),
    tasks_per_node: Optional[int] = typer.Option(None, "--tasks-per-node", help="Tasks per node (default: GPUs per node)."),
    partition: Optional[str] = typer.Option(None, "--partition", "-p", help="Slurm partition."),
    time_limit: str = typer.Option("01:00:00", "--time", "-t", help="Time limit (Slurm format)."),
    account: Optional[str] = typer.Option(None, "--account", "-A", help="Slurm account."),
    job_name: str = typer.Option("clustersim-calibrate", "--job-name", "-J", help="Job name."),
    output_dir: Path = typer.Option(Path("calibrate-runs"), "--output-dir", help="Folder for the script, the Slurm log and results.jsonl."),
    launcher: str = typer.Option("srun", "--launcher", help="srun (one task per GPU, srun --mpi=...) or torchrun (one task per node)."),
    mpi: str = typer.Option("pmix", "--mpi", help="srun --mpi plugin (pmix, pmi2, none)."),
    device: str = typer.Option("cuda", "--device", help="cuda or cpu (gloo; for tests)."),
    quick: bool = typer.Option(False, "--quick", help="Pass --quick to the bench."),
    env: list[str] = typer.Option([], "--env", help="Extra KEY=VALUE exported in the job (repeatable)."),
    bench_args: Optional[str] = typer.Option(None, "--bench-args", help="Extra arguments for 'calibrate bench' (shell words)."),
    python: Optional[str] = typer.Option(None, "--python", help="Python in the job (default: this one)."),
    cpus_per_task: Optional[int] = typer.Option(None, "--cpus-per-task", help="CPUs per task."),
    mem: Optional[str] = typer.Option(None, "--mem", help="Memory per node (Slurm format, e.g. 64G)."),
    submit: bool = typer.Option(False, "--submit", help="Write the script and submit it with sbatch."),
    wait: bool = typer.Option(False, "--wait", help="With --submit: wait until the job ends (exit 1 if it failed)."),
    wait_timeout: float = typer.Option(3600.0, "--wait-timeout", help="Seconds --wait waits at most."),
    status: Optional[str] = typer.Option(None, "--status", help="Print the state of job JOBID and where its results are."),
) -> None:
    """Render (print) an sbatch script that runs the bench, or submit it; --status JOBID checks a job.

    Examples:

      clustersim calibrate slurm --nodes 2 --gpus-per-node 8 -p gpu -A myproj > calib.sbatch

      clustersim calibrate slurm --nodes 1 --gpus-per-node 8 -p gpu --submit --wait

      clustersim calibrate slurm --status 123456
    """
    from clustersim.calibration import slurm as S

    if status is not None:
        st = S.job_state(status)
        typer.echo(f"job {status}: {st.state}" + (f" (exit {st.exit_code})" if st.exit_code else ""))
        if st.std_out:
            typer.echo(f"log: {st.std_out}")
        for line in S.collect_commands(st.work_dir, status, results=st.results):
            typer.echo(line)
        raise typer.Exit(0)
    spec = S.SbatchSpec(nodes=nodes, gpus_per_node=gpus_per_node, tasks_per_node=tasks_per_node, partition=partition,
                        time=time_limit, account=account, job_name=job_name, output_dir=str(output_dir),
                        launcher=launcher, mpi=mpi, device=device, quick=quick, env=S.parse_env(env),
                        bench_args=S.split_args(bench_args), python=python or sys.executable,
                        cpus_per_task=cpus_per_task, mem=mem)
    script = S.render_sbatch(spec)
    if not submit:
        sys.stdout.write(script)
        return
    path, job_id = S.submit(spec, script)
    typer.echo(f"submitted job {job_id} ({path})")
    for line in S.status_commands(job_id, spec):
        typer.echo(line)
    if wait:
        st = S.wait_for(job_id, timeout_s=wait_timeout)
        typer.echo(f"job {job_id}: {st.state}" + (f" (exit {st.exit_code})" if st.exit_code else ""))
        if st.state != "COMPLETED":
            raise typer.Exit(1)


def register(root: typer.Typer) -> None:
    """Kept for symmetry with the other CLI modules; the sub-app is attached in ``clustersim.cli``."""


from clustersim.cli.calibrate_fit import register as _register_fit  # noqa: E402

_register_fit(app)
