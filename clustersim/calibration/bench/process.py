"""One rank's bench process: launcher environment, NCCL settings, rendezvous, process group, row bookkeeping.

:class:`BenchRank` is the state every measurement function receives: the torch modules
(imported when it is made, never at module import), the configuration, the rank's
place in the job (rank, world size, host of every rank), its device, and the rows
already written (resume) with the writer and progress bar of rank 0.
"""

from __future__ import annotations

import datetime as _dt
import os
import tempfile
import time
from typing import Any

from clustersim.calibration.bench.config import BenchConfig
from clustersim.calibration.env import RankEnv, device_for_local_rank, local_rank_from_hosts
from clustersim.calibration.jsonl import RowWriter, row_key
from clustersim.errors import ClusterSimError
from clustersim.units import GiB

_T_PROCESS = time.time()


def _process_start_time() -> float | None:
    """Wall-clock start of this process (Linux ``/proc``), else the time this module was imported."""
    try:
        with open("/proc/self/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        start_ticks = int(fields[19])  # field 22 overall: starttime in clock ticks after boot
        with open("/proc/uptime") as fh:
            uptime = float(fh.read().split()[0])
        return time.time() - uptime + start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return _T_PROCESS


_T_START = _process_start_time()


class BenchRank:
    """State of one bench process (one rank)."""

    def __init__(self, cfg: BenchConfig, renv: RankEnv):
        import torch
        import torch.distributed as dist

        self.torch, self.dist, self.cfg, self.renv = torch, dist, cfg, renv
        self.rank, self.world = renv.rank, renv.world_size
        self.cuda = cfg.device == "cuda"
        self.writer: RowWriter | None = None
        self.done: set[tuple] = set()
        self.hosts: list[str] = [renv.hostname]
        self.nodes = 1
        self.progress: Any = None
        self.task: Any = None
        self.topo_dump: str | None = None
        self.device: Any = None
        # host microseconds per call of the latest GPU-bound timing (``host_enqueue_us`` of kernel rows)
        self.last_host_us: float | None = None

    # ---------------------------------------------------------------- set-up
    def set_nccl_env(self) -> None:
        """NCCL_ALGO/PROTO/NVLS_ENABLE and the topology dump path, before init."""
        cfg = self.cfg
        if cfg.nccl_algo:
            os.environ["NCCL_ALGO"] = cfg.nccl_algo
        if cfg.nccl_proto:
            os.environ["NCCL_PROTO"] = cfg.nccl_proto
        if cfg.nvls == "off":
            os.environ["NCCL_NVLS_ENABLE"] = "0"
        elif cfg.nvls == "on":
            os.environ["NCCL_NVLS_ENABLE"] = "1"
        # The automatic topology dump is made only in single-rank runs: with 2 ranks on an
        # H200 VM (NCCL 2.28.9) a dump requested on rank 0 alone hung rank 0's topology
        # detection at init (seen 2026-11-22). Set CLUSTERSIM_NCCL_TOPO_DUMP=1 to force it.
        want_dump = self.world == 1 or os.environ.get("CLUSTERSIM_NCCL_TOPO_DUMP") == "1"
        if self.cuda and want_dump and self.rank == 0 and "NCCL_TOPO_DUMP_FILE" not in os.environ:
            fd, path = tempfile.mkstemp(prefix="clustersim-nccl-topo-", suffix=".xml")
            os.close(fd)
            os.unlink(path)  # NCCL creates it
            os.environ["NCCL_TOPO_DUMP_FILE"] = path
            os.environ.setdefault("NCCL_TOPO_DUMP_FILE_RANK", "0")
            self.topo_dump = path
        elif self.cuda:
            self.topo_dump = os.environ.get("NCCL_TOPO_DUMP_FILE")

    def init(self) -> dict[str, Any]:
        """Rendezvous, pick the device, create the process group; returns comm_init timings."""
        torch, dist, renv = self.torch, self.dist, self.renv
        os.environ.update(renv.torch_env())
        timeout = _dt.timedelta(seconds=self.cfg.timeout_s)
        t0 = time.time()
        p0 = time.perf_counter()
        # the same rendezvous init_process_group does for env:// (it reuses torchrun's agent store when
        # TORCHELASTIC_USE_AGENT_STORE says so), opened here so that host names can be exchanged first
        store, _, _ = next(dist.rendezvous("env://", rank=self.rank, world_size=self.world, timeout=timeout))
        store.set_timeout(timeout)
        hstore = dist.PrefixStore("clustersim-hosts", store)
        # host names of every rank: node count, scope, and the local rank when the launcher (plain PMIx) gives none
        hstore.set(f"host/{self.rank}", renv.hostname)
        self.hosts = [hstore.get(f"host/{r}").decode() for r in range(self.world)]
        store = dist.PrefixStore("default_pg", store)
        self.nodes = len(set(self.hosts))
        local = renv.local_rank if renv.local_rank is not None else local_rank_from_hosts(self.rank, self.hosts)
        self._bind_device(local)
        kw: dict[str, Any] = {}
        if self.cuda:
            kw["device_id"] = self.device
        dist.init_process_group("nccl" if self.cuda else "gloo", store=store, rank=self.rank, world_size=self.world,
                                timeout=timeout, **kw)
        x = torch.ones(1, device=self.device)
        dist.all_reduce(x)
        self.sync()
        init_s = time.perf_counter() - p0
        since_start = time.time() - _T_START if _T_START else None
        # slowest rank decides when the communicator is ready everywhere
        t = torch.tensor([init_s, since_start or 0.0], dtype=torch.float64, device=self.device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return {"time_s": float(t[0]), "since_process_start_s": float(t[1]) if since_start else None,
                "started_at": t0}

    def _bind_device(self, local: int) -> None:
        """This rank's device: the CUDA device of its local rank (made current), or the CPU."""
        torch, renv = self.torch, self.renv
        if self.cuda:
            if not torch.cuda.is_available():
                raise ClusterSimError("--device cuda but torch sees no CUDA device", field="--device")
            idx = device_for_local_rank(local, renv.cuda_visible_devices)
            if idx is None or idx >= torch.cuda.device_count():
                raise ClusterSimError(f"local rank {local}: no CUDA device to bind (visible: "
                                      f"{torch.cuda.device_count()}, CUDA_VISIBLE_DEVICES={renv.cuda_visible_devices})")
            torch.cuda.set_device(idx)
            self.device = torch.device("cuda", idx)
        else:
            self.device = torch.device("cpu")
        self.local_rank = local

    def sync(self) -> None:
        """Wait for the device (CUDA); nothing on CPU, where every call has completed on return."""
        if self.cuda:
            self.torch.cuda.synchronize()

    # ---------------------------------------------------------------- rows and progress
    def emit(self, row: dict[str, Any]) -> None:
        """Write a row (rank 0) and remember its key."""
        self.done.add(row_key(row))
        if self.writer is not None:
            self.writer.write(row)

    def skip(self, key_row: dict[str, Any]) -> bool:
        """True when a row with this key is already in the file (resume)."""
        return row_key(key_row) in self.done

    def advance(self, n: int = 1) -> None:
        """Count ``n`` points done on the progress bar (rank 0)."""
        if self.progress is not None:
            self.progress.advance(self.task, n)

    def describe(self, text: str) -> None:
        """Name the point being measured on the progress bar (rank 0)."""
        if self.progress is not None:
            self.progress.update(self.task, description=text)

    # ---------------------------------------------------------------- memory
    def free_bytes(self) -> int:
        """Free device memory (CUDA), else this rank's share of the host's available memory."""
        if self.cuda:
            # buffers of earlier sizes sit in torch's caching allocator and would count as used
            self.torch.cuda.empty_cache()
            free, _total = self.torch.cuda.mem_get_info(self.device)
            return int(free)
        try:
            with open("/proc/meminfo") as fh:
                for line in fh:
                    if line.startswith("MemAvailable:"):
                        return int(line.split()[1]) * 1024 // max(1, self.renv.local_world_size or 1)
        except OSError:
            pass
        return 4 * GiB

    def all_agree(self, ok: bool, group: Any = None) -> bool:
        """True only when ``ok`` holds on every rank of ``group``."""
        t = self.torch.tensor([1 if ok else 0], dtype=self.torch.int32, device=self.device)
        self.dist.all_reduce(t, op=self.dist.ReduceOp.MIN, group=group)
        return bool(int(t.item()))
