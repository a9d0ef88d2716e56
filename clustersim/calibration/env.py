"""Rank discovery: who am I, how many are we, where is the rendezvous, which GPU is mine.

Launchers are tried in this order (the first whose variables are set wins):

1. torchrun / torch.distributed.run: ``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``,
   ``LOCAL_WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``;
2. Slurm ``srun`` (also under ``--mpi=pmix``): ``SLURM_PROCID``, ``SLURM_LOCALID``,
   ``SLURM_NTASKS``, ``SLURM_JOB_NODELIST``; the master is the first host of
   ``scontrol show hostnames`` (or :func:`expand_nodelist` when scontrol is
   missing), the port is derived from the job id unless ``MASTER_PORT`` is set;
3. Open MPI: ``OMPI_COMM_WORLD_RANK``, ``..._LOCAL_RANK``, ``..._SIZE``, ``..._LOCAL_SIZE``;
4. PMIx without Slurm: ``PMIX_RANK`` (world size from ``PMIX_SIZE``/``WORLD_SIZE``; the
   local rank is not an environment variable in PMIx: ``SLURM_LOCALID`` if set, else
   found at start-up by exchanging host names, see :attr:`RankEnv.local_rank`);
5. MPICH/Hydra, Intel MPI, Cray: ``PMI_RANK``, ``PMI_SIZE`` (local rank from
   ``MPI_LOCALRANKID`` or ``PMI_LOCAL_RANK``);
6. nothing set: a single process (rank 0 of 1).

GPU binding: Slurm filters ``CUDA_VISIBLE_DEVICES`` per task (``--gpus-per-task``,
``--gpu-bind``) or per node (``--gpus-per-node``). When a process sees exactly one
device it uses index 0; otherwise the local rank indexes the visible list.

Examples
--------
>>> e = discover({"RANK": "1", "LOCAL_RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "n1", "MASTER_PORT": "29500"})
>>> (e.launcher, e.rank, e.local_rank, e.world_size, e.master_addr, e.master_port, e.device_index)
('torchrun', 1, 1, 2, 'n1', 29500, 1)
>>> expand_nodelist("gpu[01-03,07],cpu5")
['gpu01', 'gpu02', 'gpu03', 'gpu07', 'cpu5']
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

from clustersim.errors import ClusterSimError

DEFAULT_PORT = 29500


@dataclass(frozen=True)
class RankEnv:
    """What a process learned from its launcher.

    Attributes
    ----------
    launcher:
        ``torchrun``, ``slurm``, ``openmpi``, ``pmix``, ``pmi`` or ``single``.
    rank, world_size:
        Global rank and number of ranks.
    local_rank:
        Rank among the processes of this host; ``None`` when the launcher does not
        say (plain PMIx) and it must be found by exchanging host names after the
        rendezvous (:func:`local_rank_from_hosts`).
    local_world_size:
        Processes on this host, when known.
    node_rank, num_nodes:
        This host's index and the host count, when known.
    master_addr, master_port:
        Rendezvous address of rank 0 (``MASTER_ADDR``/``MASTER_PORT`` for ``env://``).
    hostname:
        This host's name.
    nodelist:
        All hosts of the job in order, when known (Slurm).
    device_index:
        CUDA device index to bind to, after the launcher's device filtering
        (``None`` until the local rank is known).
    cuda_visible_devices:
        ``CUDA_VISIBLE_DEVICES`` as seen by this process.
    pmix:
        True when started through PMIx (``PMIX_RANK`` set, e.g. ``srun --mpi=pmix``).
    job_id:
        Slurm job id, when under Slurm.
    """

    launcher: str
    rank: int
    world_size: int
    local_rank: int | None
    local_world_size: int | None
    node_rank: int | None
    num_nodes: int | None
    master_addr: str
    master_port: int
    hostname: str
    nodelist: list[str] = field(default_factory=list)
    device_index: int | None = None
    cuda_visible_devices: str | None = None
    pmix: bool = False
    job_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain dict of the fields."""
        return asdict(self)

    def torch_env(self) -> dict[str, str]:
        """Variables ``torch.distributed`` reads with ``init_method='env://'``."""
        env = {"RANK": str(self.rank), "WORLD_SIZE": str(self.world_size),
               "MASTER_ADDR": self.master_addr, "MASTER_PORT": str(self.master_port)}
        if self.local_rank is not None:
            env["LOCAL_RANK"] = str(self.local_rank)
        return env


_BRACKET = re.compile(r"^(?P<prefix>[^\[\],]*)\[(?P<ranges>[^\]]*)\](?P<rest>.*)$")


def _split_top(text: str) -> list[str]:
    """Split on commas that are not inside brackets."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise ClusterSimError(f"unbalanced ']' in node list {text!r}")
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth != 0:
        raise ClusterSimError(f"unbalanced '[' in node list {text!r}")
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def _expand_one(item: str) -> list[str]:
    m = _BRACKET.match(item)
    if not m:
        if "[" in item or "]" in item:
            raise ClusterSimError(f"cannot read node list item {item!r}")
        return [item]
    prefix, ranges, rest = m.group("prefix"), m.group("ranges"), m.group("rest")
    out: list[str] = []
    for r in ranges.split(","):
        r = r.strip()
        if not r:
            raise ClusterSimError(f"empty range in node list item {item!r}")
        if "-" in r:
            lo, hi = r.split("-", 1)
            if not (lo.isdigit() and hi.isdigit()) or int(hi) < int(lo):
                raise ClusterSimError(f"bad range {r!r} in node list item {item!r}")
            width = len(lo)  # zero padding of the first number is kept ("01-03" -> 01 02 03)
            values = [str(v).zfill(width) for v in range(int(lo), int(hi) + 1)]
        else:
            if not r.isdigit():
                raise ClusterSimError(f"bad number {r!r} in node list item {item!r}")
            values = [r]
        for v in values:
            # the rest may hold another bracket group ("rack[1-2]-n[01-02]")
            for tail in _expand_one(rest) if rest else [""]:
                out.append(prefix + v + tail)
    return out


def expand_nodelist(text: str) -> list[str]:
    """Expand a Slurm compressed host list (what ``scontrol show hostnames`` does).

    >>> expand_nodelist("n[1-3]")
    ['n1', 'n2', 'n3']
    >>> expand_nodelist("rack[1-2]-gpu[08-09]")
    ['rack1-gpu08', 'rack1-gpu09', 'rack2-gpu08', 'rack2-gpu09']
    """
    text = (text or "").strip()
    if not text:
        return []
    out: list[str] = []
    for item in _split_top(text):
        out.extend(_expand_one(item))
    return out


def scontrol_hostnames(nodelist: str) -> list[str]:
    """Hosts of a node list via ``scontrol show hostnames``; the pure-Python expander if that fails."""
    exe = shutil.which("scontrol")
    if exe and nodelist:
        try:
            res = subprocess.run([exe, "show", "hostnames", nodelist], capture_output=True, text=True, timeout=20)
            hosts = [h.strip() for h in res.stdout.splitlines() if h.strip()]
            if res.returncode == 0 and hosts:
                return hosts
        except (OSError, subprocess.SubprocessError):
            pass
    return expand_nodelist(nodelist)


def device_for_local_rank(local_rank: int | None, cuda_visible_devices: str | None) -> int | None:
    """CUDA device index for a local rank after the launcher's filtering.

    >>> device_for_local_rank(3, "5")          # Slurm --gpus-per-task=1: one visible device
    0
    >>> device_for_local_rank(1, "4,5,6,7")    # whole node visible, pick by local rank
    1
    >>> device_for_local_rank(2, None)
    2
    """
    if local_rank is None:
        return None
    if cuda_visible_devices is None or cuda_visible_devices.strip() == "":
        return local_rank
    visible = [d for d in cuda_visible_devices.split(",") if d.strip()]
    if visible in ([], ["-1"]) or cuda_visible_devices.strip() in ("NoDevFiles", "-1"):
        return None  # no GPU for this process
    if len(visible) == 1:
        return 0
    if local_rank >= len(visible):
        raise ClusterSimError(f"local rank {local_rank} but only {len(visible)} visible GPUs "
                              f"(CUDA_VISIBLE_DEVICES={cuda_visible_devices}); one task per GPU is needed")
    return local_rank


def _int(env: Mapping[str, str], name: str, *, required: bool = True, minimum: int = 0) -> int | None:
    v = env.get(name)
    if v is None or v.strip() == "":
        if required:
            raise ClusterSimError(f"environment variable {name} is not set", field=name)
        return None
    try:
        out = int(v.strip())
    except ValueError:
        raise ClusterSimError(f"{name}={v!r} is not an integer", field=name) from None
    if out < minimum:
        raise ClusterSimError(f"{name}={v!r} must be >= {minimum}", field=name)
    return out


def _port(env: Mapping[str, str], job_id: str | None = None) -> int:
    if env.get("MASTER_PORT"):
        p = _int(env, "MASTER_PORT", minimum=1)
        assert p is not None
        if p > 65535:
            raise ClusterSimError(f"MASTER_PORT={p} is not a TCP port", field="MASTER_PORT")
        return p
    if job_id and job_id.isdigit():
        # same on every task of the job, spread so that jobs sharing a node do not collide
        return 20000 + int(job_id) % 20000
    return DEFAULT_PORT


def _slurm_tasks_per_node(spec: str | None, node_rank: int | None) -> int | None:
    """``SLURM_TASKS_PER_NODE`` like ``2(x3),1`` -> tasks on node ``node_rank``."""
    if not spec or node_rank is None:
        return None
    counts: list[int] = []
    for part in spec.split(","):
        m = re.fullmatch(r"\s*(\d+)(?:\(x(\d+)\))?\s*", part)
        if not m:
            return None
        counts.extend([int(m.group(1))] * int(m.group(2) or 1))
    return counts[node_rank] if node_rank < len(counts) else None


def local_rank_from_hosts(rank: int, hosts: list[str]) -> int:
    """Local rank from every rank's host name (``hosts[r]`` is rank r's host).

    >>> local_rank_from_hosts(3, ["a", "a", "b", "b"])
    1
    """
    if not 0 <= rank < len(hosts):
        raise ClusterSimError(f"rank {rank} outside the {len(hosts)} gathered host names")
    return sum(1 for h in hosts[:rank] if h == hosts[rank])


def discover(environ: Mapping[str, str] | None = None, *, use_scontrol: bool = True,
             hostname: str | None = None) -> RankEnv:
    """Find rank, world size, rendezvous and GPU from the launcher's environment.

    Parameters
    ----------
    environ:
        Environment to read (default ``os.environ``).
    use_scontrol:
        Ask ``scontrol show hostnames`` for the Slurm node list (else only the
        pure-Python expander is used).
    hostname:
        This host's name (default ``socket.gethostname()``).
    """
    env = dict(os.environ if environ is None else environ)
    host = hostname or env.get("SLURMD_NODENAME") or socket.gethostname()
    cvd = env.get("CUDA_VISIBLE_DEVICES")
    pmix = "PMIX_RANK" in env
    job_id = env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID")

    def finish(launcher: str, rank: int, world: int, local: int | None, local_world: int | None,
               node_rank: int | None, num_nodes: int | None, master: str, port: int,
               nodelist: list[str] | None = None) -> RankEnv:
        if world < 1:
            raise ClusterSimError(f"world size must be >= 1, got {world} ({launcher})")
        if not 0 <= rank < world:
            raise ClusterSimError(f"rank {rank} outside world size {world} ({launcher})")
        if local is not None and local_world is not None and not 0 <= local < local_world:
            raise ClusterSimError(f"local rank {local} outside local world size {local_world} ({launcher})")
        return RankEnv(launcher=launcher, rank=rank, world_size=world, local_rank=local, local_world_size=local_world,
                       node_rank=node_rank, num_nodes=num_nodes, master_addr=master, master_port=port, hostname=host,
                       nodelist=list(nodelist or []), device_index=device_for_local_rank(local, cvd),
                       cuda_visible_devices=cvd, pmix=pmix, job_id=job_id)

    # 1. torchrun
    if "RANK" in env and "WORLD_SIZE" in env:
        rank, world = _int(env, "RANK"), _int(env, "WORLD_SIZE", minimum=1)
        local = _int(env, "LOCAL_RANK", required=False)
        lws = _int(env, "LOCAL_WORLD_SIZE", required=False, minimum=1)
        group = _int(env, "GROUP_RANK", required=False)
        nnodes = (world // lws) if lws and world % lws == 0 else None
        if local is None and world == 1:
            local = 0
        return finish("torchrun", rank, world, local, lws, group, nnodes,  # type: ignore[arg-type]
                      env.get("MASTER_ADDR") or "127.0.0.1", _port(env))

    # 2. Slurm (srun; also srun --mpi=pmix, which sets PMIX_RANK as well)
    if "SLURM_PROCID" in env and ("SLURM_NTASKS" in env or "SLURM_NPROCS" in env):
        rank = _int(env, "SLURM_PROCID")
        world = _int(env, "SLURM_NTASKS" if "SLURM_NTASKS" in env else "SLURM_NPROCS", minimum=1)
        local = _int(env, "SLURM_LOCALID", required=False)
        node_rank = _int(env, "SLURM_NODEID", required=False)
        nl_text = env.get("SLURM_STEP_NODELIST") or env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST") or ""
        nodelist = scontrol_hostnames(nl_text) if use_scontrol else expand_nodelist(nl_text)
        nnodes = _int(env, "SLURM_STEP_NUM_NODES", required=False, minimum=1) or \
            _int(env, "SLURM_NNODES", required=False, minimum=1) or (len(nodelist) or None)
        lws = _int(env, "SLURM_NTASKS_PER_NODE", required=False, minimum=1) or _slurm_tasks_per_node(
            env.get("SLURM_STEP_TASKS_PER_NODE") or env.get("SLURM_TASKS_PER_NODE"), node_rank)
        master = env.get("MASTER_ADDR") or (nodelist[0] if nodelist else "127.0.0.1")
        return finish("slurm", rank, world, local, lws, node_rank, nnodes, master, _port(env, job_id),  # type: ignore[arg-type]
                      nodelist)

    # 3. Open MPI
    if "OMPI_COMM_WORLD_RANK" in env:
        rank = _int(env, "OMPI_COMM_WORLD_RANK")
        world = _int(env, "OMPI_COMM_WORLD_SIZE", minimum=1)
        local = _int(env, "OMPI_COMM_WORLD_LOCAL_RANK", required=False)
        lws = _int(env, "OMPI_COMM_WORLD_LOCAL_SIZE", required=False, minimum=1)
        node_rank = _int(env, "OMPI_COMM_WORLD_NODE_RANK", required=False)
        master = _master_or_single_host(env, world, lws, "Open MPI")
        return finish("openmpi", rank, world, local, lws, node_rank, None, master, _port(env))  # type: ignore[arg-type]

    # 4. PMIx alone (PRRTE / Open MPI 5 without OMPI_* vars)
    if pmix:
        rank = _int(env, "PMIX_RANK")
        size_var = next((v for v in ("PMIX_SIZE", "WORLD_SIZE", "SLURM_NTASKS") if env.get(v)), None)
        if size_var is None:
            raise ClusterSimError("PMIX_RANK is set but the world size is not (set WORLD_SIZE or launch with srun)",
                                  field="PMIX_RANK")
        world = _int(env, size_var, minimum=1)
        local = _int(env, "SLURM_LOCALID", required=False)
        master = _master_or_single_host(env, world, None, "PMIx")
        return finish("pmix", rank, world, local, None, None, None, master, _port(env))  # type: ignore[arg-type]

    # 5. PMI (MPICH/Hydra, Intel MPI, Cray)
    if "PMI_RANK" in env:
        rank = _int(env, "PMI_RANK")
        world = _int(env, "PMI_SIZE", minimum=1)
        local = _int(env, "MPI_LOCALRANKID", required=False)
        if local is None:
            local = _int(env, "PMI_LOCAL_RANK", required=False)
        lws = _int(env, "MPI_LOCALNRANKS", required=False, minimum=1) or _int(env, "PMI_LOCAL_SIZE", required=False, minimum=1)
        master = _master_or_single_host(env, world, lws, "PMI")
        return finish("pmi", rank, world, local, lws, None, None, master, _port(env))  # type: ignore[arg-type]

    # 6. single process: nobody else to meet, so any free local port (a fixed one could collide)
    port = _port(env) if env.get("MASTER_PORT") else _free_port()
    return finish("single", 0, 1, 0, 1, 0, 1, env.get("MASTER_ADDR") or "127.0.0.1", port)


def _free_port() -> int:
    """A TCP port that is free on this host right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _master_or_single_host(env: Mapping[str, str], world: int, local_world: int | None, who: str) -> str:
    """MASTER_ADDR for launchers that do not name the rank-0 host."""
    if env.get("MASTER_ADDR"):
        return env["MASTER_ADDR"]
    if world == 1 or (local_world is not None and local_world == world):
        return "127.0.0.1"  # every rank on this host
    raise ClusterSimError(f"{who} does not tell the rank-0 host of a multi-host job: set MASTER_ADDR "
                          "(and MASTER_PORT) to rank 0's host name", field="MASTER_ADDR")
