"""``clustersim calibrate slurm``: render, submit and follow the calibration job.

The rendered sbatch script is meant to be read and edited: ``#SBATCH`` lines for
the allocation (nodes, one task per GPU, partition, time, account), the
rendezvous (``MASTER_ADDR`` = first host of ``scontrol show hostnames``,
``MASTER_PORT`` from the job id), NCCL settings and one ``srun --mpi=pmix`` line
(or one torchrun per node with ``launcher="torchrun"``).

Quoting: every user value in the shell part goes through :func:`shlex.quote`;
``#SBATCH`` lines (parsed by sbatch, not by the shell) use double quotes with
``\\`` escapes, which sbatch understands; newlines and NUL bytes are rejected
everywhere, so no value can start a new line of script.

Examples
--------
>>> spec = SbatchSpec(nodes=1, gpus_per_node=2, job_name="h200 x2", output_dir="/scratch/cal", python="python3")
>>> text = render_sbatch(spec)
>>> '#SBATCH --job-name="h200 x2"' in text and "srun --mpi=pmix" in text
True
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from clustersim.errors import ClusterSimError

RESULTS_NAME = "results.jsonl"
TERMINAL_STATES = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED",
                   "BOOT_FAIL", "DEADLINE", "REVOKED", "SPECIAL_EXIT"}
_ENV_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_TIME = re.compile(r"^(?:\d+-)?\d+(?::\d+){0,2}$|^(?:UNLIMITED|INFINITE)$")
_WORD = re.compile(r"^[A-Za-z0-9_.+-]+$")


@dataclass
class SbatchSpec:
    """What the calibration job asks for and runs."""

    nodes: int = 1
    """Nodes to allocate."""
    gpus_per_node: int = 8
    """GPUs per node; one task per GPU (0 for a CPU/gloo job)."""
    tasks_per_node: int | None = None
    """Ranks per node (default: ``gpus_per_node``)."""
    partition: str | None = None
    time: str = "01:00:00"
    account: str | None = None
    job_name: str = "clustersim-calibrate"
    output_dir: str = "calibrate-runs"
    """Folder of the Slurm log (``slurm-<jobid>.out``) and ``results.jsonl``."""
    launcher: str = "srun"
    """``srun``: one task per rank, started by ``srun --mpi=<mpi>``; ``torchrun``: one torchrun per node."""
    mpi: str = "pmix"
    device: str = "cuda"
    quick: bool = False
    env: dict[str, str] = field(default_factory=lambda: {})
    """Extra variables exported in the job (NCCL_NVLS_ENABLE=0 is the default unless set here)."""
    bench_args: list[str] = field(default_factory=list)
    """Extra arguments of ``clustersim calibrate bench``."""
    python: str = "python3"
    cpus_per_task: int | None = None
    mem: str | None = None
    exclusive: bool | None = None
    """``#SBATCH --exclusive`` (default: on for GPU jobs, so no other job disturbs the measurement)."""

    @property
    def ranks_per_node(self) -> int:
        """Tasks (ranks) per node."""
        return self.tasks_per_node if self.tasks_per_node is not None else self.gpus_per_node

    @property
    def results_path(self) -> str:
        """Where rank 0 writes the measurements."""
        return str(Path(self.output_dir) / RESULTS_NAME)


def _check_text(value: str | None, name: str, *, empty_ok: bool = False) -> None:
    if value is None:
        return
    if not isinstance(value, str):
        raise ClusterSimError(f"must be text, got {type(value).__name__}", field=name)
    if not value and not empty_ok:
        raise ClusterSimError("must not be empty", field=name)
    bad = next((c for c in value if c in "\n\r\x00"), None)
    if bad is not None:
        raise ClusterSimError(f"must not contain {bad!r} (a new line could inject script lines)", field=name)


def validate_spec(spec: SbatchSpec) -> SbatchSpec:
    """Reject values that would make a wrong or unsafe script (ClusterSimError naming the option)."""
    if spec.nodes < 1:
        raise ClusterSimError(f"must be >= 1, got {spec.nodes}", field="--nodes")
    if spec.gpus_per_node < 0:
        raise ClusterSimError(f"must be >= 0, got {spec.gpus_per_node}", field="--gpus-per-node")
    if spec.device not in ("cuda", "cpu"):
        raise ClusterSimError(f"must be cuda or cpu, got {spec.device!r}", field="--device")
    if spec.device == "cuda" and spec.gpus_per_node < 1:
        raise ClusterSimError("a cuda job needs --gpus-per-node >= 1 (or use --device cpu)", field="--gpus-per-node")
    if spec.ranks_per_node < 1:
        raise ClusterSimError("needs at least one task per node (set --tasks-per-node with --device cpu)",
                              field="--tasks-per-node")
    if spec.device == "cuda" and spec.ranks_per_node > spec.gpus_per_node:
        raise ClusterSimError(f"{spec.ranks_per_node} tasks per node but {spec.gpus_per_node} GPUs: one task per GPU",
                              field="--tasks-per-node")
    if spec.launcher not in ("srun", "torchrun"):
        raise ClusterSimError(f"must be srun or torchrun, got {spec.launcher!r}", field="--launcher")
    for name, val in (("--job-name", spec.job_name), ("--partition", spec.partition), ("--account", spec.account),
                      ("--output-dir", spec.output_dir), ("--python", spec.python), ("--mem", spec.mem),
                      ("--time", spec.time), ("--mpi", spec.mpi)):
        _check_text(val, name)
    if not _TIME.match(spec.time):
        raise ClusterSimError(f"{spec.time!r} is not a Slurm time (MM, HH:MM:SS, D-HH:MM:SS)", field="--time")
    if not _WORD.match(spec.mpi):
        raise ClusterSimError(f"{spec.mpi!r} is not an srun --mpi plugin name", field="--mpi")
    if spec.mem is not None and not re.match(r"^\d+[KMGT]?$", spec.mem):
        raise ClusterSimError(f"{spec.mem!r} is not a Slurm memory size (e.g. 64G)", field="--mem")
    if spec.cpus_per_task is not None and spec.cpus_per_task < 1:
        raise ClusterSimError("must be >= 1", field="--cpus-per-task")
    for k, v in spec.env.items():
        if not _ENV_KEY.match(k):
            raise ClusterSimError(f"{k!r} is not a variable name", field="--env")
        _check_text(v, f"--env {k}", empty_ok=True)
    for a in spec.bench_args:
        _check_text(a, "--bench-args", empty_ok=True)
    return spec


def parse_env(items: list[str]) -> dict[str, str]:
    """``["A=1", "B=x y"]`` -> ``{"A": "1", "B": "x y"}``.

    >>> parse_env(["NCCL_DEBUG=INFO"])
    {'NCCL_DEBUG': 'INFO'}
    """
    out: dict[str, str] = {}
    for item in items:
        if "=" not in item:
            raise ClusterSimError(f"{item!r}: expected KEY=VALUE", field="--env")
        k, v = item.split("=", 1)
        if not _ENV_KEY.match(k):
            raise ClusterSimError(f"{k!r} is not a variable name", field="--env")
        out[k] = v
    return out


def split_args(text: str | None) -> list[str]:
    """Shell words of ``--bench-args`` (quotes respected)."""
    if not text:
        return []
    _check_text(text, "--bench-args")
    try:
        return shlex.split(text)
    except ValueError as exc:
        raise ClusterSimError(f"cannot split {text!r}: {exc}", field="--bench-args") from None


def sbatch_quote(value: str) -> str:
    """Quote a value for an ``#SBATCH`` line (sbatch's own parser: double quotes, backslash escapes).

    >>> sbatch_quote('a "b" $(c)')
    '"a \\\\"b\\\\" $(c)"'
    """
    _check_text(value, "#SBATCH value", empty_ok=True)
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _slurm_filename(path: str) -> str:
    """Escape ``%`` (Slurm file-name patterns) in a literal path."""
    return path.replace("%", "%%")


def bench_command(spec: SbatchSpec) -> list[str]:
    """The ``clustersim calibrate bench`` words every rank runs (without the launcher)."""
    words = ["-m", "clustersim", "calibrate", "bench", "-o", spec.results_path, "--device", spec.device]
    if spec.quick:
        words.append("--quick")
    return words + list(spec.bench_args)


def render_sbatch(spec: SbatchSpec) -> str:
    """The sbatch script text for ``spec`` (validated first)."""
    validate_spec(spec)
    q = shlex.quote
    n_ranks = spec.nodes * spec.ranks_per_node
    exclusive = spec.exclusive if spec.exclusive is not None else spec.device == "cuda"
    sb = [
        "#!/bin/bash",
        "# clustersim calibration job: rendered by `clustersim calibrate slurm`; read it, edit it, submit it with sbatch.",
        f"# {spec.nodes} node(s) x {spec.ranks_per_node} rank(s) = {n_ranks} ranks, device {spec.device}, launcher {spec.launcher}",
        f"#SBATCH --job-name={sbatch_quote(spec.job_name)}",
        f"#SBATCH --nodes={spec.nodes}",
    ]
    if spec.launcher == "srun":
        sb.append(f"#SBATCH --ntasks-per-node={spec.ranks_per_node}")
    else:
        sb.append("#SBATCH --ntasks-per-node=1")
    if spec.gpus_per_node > 0:
        sb.append(f"#SBATCH --gpus-per-node={spec.gpus_per_node}")
    if spec.cpus_per_task is not None:
        sb.append(f"#SBATCH --cpus-per-task={spec.cpus_per_task}")
    if spec.mem is not None:
        sb.append(f"#SBATCH --mem={spec.mem}")
    sb.append(f"#SBATCH --time={spec.time}")
    if spec.partition:
        sb.append(f"#SBATCH --partition={sbatch_quote(spec.partition)}")
    if spec.account:
        sb.append(f"#SBATCH --account={sbatch_quote(spec.account)}")
    sb.append(f"#SBATCH --output={sbatch_quote(_slurm_filename(str(Path(spec.output_dir) / 'slurm-%j.out')).replace('%%j', '%j'))}")
    sb.append(f"#SBATCH --comment={sbatch_quote('clustersim results=' + spec.results_path)}")
    if exclusive:
        sb.append("#SBATCH --exclusive")
    env = {"NCCL_NVLS_ENABLE": "0"} if spec.device == "cuda" else {}
    env.update(spec.env)
    body = [
        "",
        "set -euo pipefail",
        "",
        f"OUT_DIR={q(spec.output_dir)}",
        'mkdir -p "$OUT_DIR"',
        "",
        "# Rendezvous: rank 0 runs on the first host of the allocation; the port is derived from the job id",
        "# so that jobs sharing a node do not collide.",
        'export MASTER_ADDR="$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)"',
        "export MASTER_PORT=$((20000 + SLURM_JOB_ID % 20000))",
    ]
    if env:
        body += ["", "# NCCL and user settings (NCCL_NVLS_ENABLE=0: measure without NVLink multicast unless asked)"]
        body += [f"export {k}={q(v)}" for k, v in env.items()]
    body += ["", 'echo "job $SLURM_JOB_ID on $SLURM_JOB_NODELIST, master $MASTER_ADDR:$MASTER_PORT"']
    bench = [spec.python, *bench_command(spec)]
    per_node = spec.ranks_per_node if spec.launcher == "srun" else 1
    cpus = ""
    if spec.cpus_per_task is None:
        # without --cpus-per-task a step gets one CPU per task; share the node's CPUs among its tasks
        # instead (NCCL's proxy threads and torchrun's workers need their own)
        body += ["", "# CPUs per task: this node's allocated CPUs shared among its tasks",
                 f"CPUS_PER_TASK=$(( ${{SLURM_CPUS_ON_NODE:-1}} / {per_node} ))",
                 '[ "$CPUS_PER_TASK" -ge 1 ] || CPUS_PER_TASK=1']
        cpus = ' "--cpus-per-task=$CPUS_PER_TASK"'
    if spec.launcher == "srun":
        head = " ".join(q(w) for w in ["srun", f"--mpi={spec.mpi}", f"--ntasks-per-node={spec.ranks_per_node}",
                                       "--kill-on-bad-exit=1"])
        body += ["", "# one task per rank; each finds its rank from SLURM_PROCID / PMIx (clustersim.calibration.env)",
                 head + cpus + " " + " ".join(q(w) for w in bench)]
    else:
        # the words with "$" are constant text of ours, left for the shell to expand (double-quoted);
        # everything that came from the user is shlex-quoted
        head = " ".join(q(w) for w in ["srun", "--ntasks-per-node=1", "--kill-on-bad-exit=1"]) + cpus + " " + \
            " ".join(q(w) for w in [spec.python, "-m", "torch.distributed.run"])
        expanded = ('"--nnodes=$SLURM_JOB_NUM_NODES" '
                    f"--nproc-per-node={spec.ranks_per_node} --rdzv-backend=c10d "
                    '"--rdzv-endpoint=$MASTER_ADDR:$MASTER_PORT" "--rdzv-id=$SLURM_JOB_ID"')
        body += ["", "# one torchrun per node; torchrun starts one rank per GPU",
                 f"{head} {expanded} " + " ".join(q(w) for w in bench[1:])]
    body += ["", 'echo "results: $OUT_DIR/' + RESULTS_NAME + '"', ""]
    return "\n".join(sb + body)


def parse_job_id(stdout: str) -> str:
    """Job id from ``sbatch --parsable`` (``123`` or ``123;cluster``) or plain sbatch output.

    >>> parse_job_id("4242;local\\n"), parse_job_id("Submitted batch job 17\\n")
    ('4242', '17')
    """
    text = stdout.strip()
    m = re.match(r"^(\d+)(?:;\S+)?$", text.splitlines()[-1].strip()) if text else None
    if not m:
        m = re.search(r"Submitted batch job (\d+)", text)
    if not m:
        raise ClusterSimError(f"cannot find a job id in sbatch's answer {text!r}")
    return m.group(1)


def _tool(name: str) -> str:
    exe = shutil.which(name)
    if not exe:
        raise ClusterSimError(f"{name} not found: run this on a Slurm login node (or print the script and copy it)")
    return exe


def submit(spec: SbatchSpec, script: str | None = None) -> tuple[Path, str]:
    """Write the script into the output folder and submit it; returns (script path, job id)."""
    spec.output_dir = str(Path(spec.output_dir).expanduser().resolve())
    script = render_sbatch(spec)  # rendered again: the output folder is now absolute
    out = Path(spec.output_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
        path = out / "calibrate.sbatch"
        path.write_text(script)
    except OSError as exc:
        raise ClusterSimError(f"cannot write the script: {exc.strerror or exc}", file=str(out)) from None
    res = subprocess.run([_tool("sbatch"), "--parsable", str(path)], capture_output=True, text=True, timeout=120)
    if res.returncode != 0:
        raise ClusterSimError(f"sbatch failed (exit {res.returncode}): {res.stderr.strip() or res.stdout.strip()}",
                              file=str(path))
    return path, parse_job_id(res.stdout)


@dataclass
class JobState:
    """What Slurm says about a job."""

    job_id: str
    state: str
    exit_code: str | None = None
    std_out: str | None = None
    work_dir: str | None = None
    comment: str | None = None
    job_name: str | None = None

    @property
    def results(self) -> str | None:
        """The results file named in the job's comment (``clustersim results=PATH``)."""
        if self.comment and self.comment.startswith("clustersim results="):
            return self.comment.split("=", 1)[1]
        return None




def parse_scontrol_job(text: str, job_id: str) -> JobState:
    """Parse ``scontrol show job -o`` (values may hold spaces: split on the known ``Key=`` names)."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    fields: dict[str, str] = {}
    # scontrol keys are capitalised (JobState=, AllocNode:Sid=, CPUs/Task=); lower-case "x=" stays inside values
    starts = [(m.start(), m.group(1)) for m in re.finditer(r"(?:^|\s)([A-Z][A-Za-z/:_]*)=", line)]
    for i, (pos, key) in enumerate(starts):
        vstart = line.index("=", pos) + 1
        vend = starts[i + 1][0] if i + 1 < len(starts) else len(line)
        fields[key] = line[vstart:vend].strip()
    state = fields.get("JobState", "UNKNOWN")
    return JobState(job_id=job_id, state=state, exit_code=fields.get("ExitCode"), std_out=fields.get("StdOut"),
                    work_dir=fields.get("WorkDir"), comment=fields.get("Comment"), job_name=fields.get("JobName"))


def job_state(job_id: str) -> JobState:
    """The job's state from ``scontrol show job`` (falls back to ``sacct`` for finished, purged jobs)."""
    job_id = str(job_id).strip()
    if not re.match(r"^\d+(?:_\d+)?$", job_id):
        raise ClusterSimError(f"{job_id!r} is not a Slurm job id", field="--status")
    res = subprocess.run([_tool("scontrol"), "show", "job", "-o", job_id], capture_output=True, text=True, timeout=60)
    if res.returncode == 0 and res.stdout.strip():
        return parse_scontrol_job(res.stdout, job_id)
    sacct = shutil.which("sacct")
    if sacct:
        r2 = subprocess.run([sacct, "-j", job_id, "-X", "-n", "-P", "-o", "State,ExitCode,WorkDir,Comment"],
                            capture_output=True, text=True, timeout=60)
        line = r2.stdout.strip().splitlines()[0] if r2.returncode == 0 and r2.stdout.strip() else ""
        if line:
            parts = line.split("|")
            parts += [""] * (4 - len(parts))
            return JobState(job_id=job_id, state=parts[0].split()[0] if parts[0] else "UNKNOWN",
                            exit_code=parts[1] or None, work_dir=parts[2] or None, comment=parts[3] or None)
    return JobState(job_id=job_id, state="UNKNOWN")


def wait_for(job_id: str, *, timeout_s: float = 3600.0, poll_s: float = 1.0) -> JobState:
    """Poll until the job reaches a final state; ClusterSimError after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    st = job_state(job_id)
    while st.state.split()[0] not in TERMINAL_STATES:
        if time.monotonic() > deadline:
            raise ClusterSimError(f"job {job_id} still {st.state} after {timeout_s:.0f} s")
        time.sleep(poll_s)
        st = job_state(job_id)
    return st


def status_commands(job_id: str, spec: SbatchSpec) -> list[str]:
    """Commands to follow the job and collect its results (printed after submission)."""
    q = shlex.quote
    log = str(Path(spec.output_dir) / f"slurm-{job_id}.out")
    return [
        f"status:   clustersim calibrate slurm --status {job_id}    (or: squeue -j {job_id})",
        f"log:      tail -f {q(log)}",
        f"cancel:   scancel {job_id}",
        *collect_commands(spec.output_dir, job_id, results=spec.results_path)[1:],
    ]


def collect_commands(work_dir: str | None, job_id: str, *, results: str | None = None) -> list[str]:
    """Where the results are and what to run next."""
    q = shlex.quote
    res = results or (str(Path(work_dir) / RESULTS_NAME) if work_dir else RESULTS_NAME)
    return [
        f"job {job_id} results:",
        f"results:  {q(res)}   (JSON lines; a re-submitted job resumes where this one stopped)",
        f"fit:      clustersim calibrate fit {q(res)} -o profile.yaml",
        f"report:   clustersim calibrate report {q(res)} --profile profile.yaml",
    ]
