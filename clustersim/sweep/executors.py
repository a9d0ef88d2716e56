"""Where a sweep's points run: one interface, four executors.

An executor takes a picklable function and a list of items and yields ``fn(item)`` results as
they finish, in any order (the sweep orders rows by point, so the order never reaches a table):

* ``serial``: in this process, one after another (debugging, tiny studies).
* ``local`` (default): a process pool on this machine (``spawn`` start method: no state leaks
  from the parent into workers).
* ``dask``: a Dask distributed cluster at ``--address tcp://host:8786``, or a ``LocalCluster``
  started here when no address is given.
* ``slurm``: one Slurm job array through submitit, ``--max-jobs`` array tasks at a time
  (``--array=0-N%max``); each task evaluates one point.

Every executor evaluates the same function on the same data, so results do not depend on
where points ran.
"""

from __future__ import annotations

import abc
import os
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from clustersim.errors import ClusterSimError

EXECUTORS = ("local", "serial", "dask", "slurm")


class Executor(abc.ABC):
    """Base class: ``map_unordered(fn, items)`` yields results as they finish; a context manager."""

    name = "base"

    @abc.abstractmethod
    def map_unordered(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> Iterator[Any]:
        """Yield ``fn(item)`` for every item, in completion order."""

    def close(self) -> None:
        """Release workers, clusters and connections."""

    def __enter__(self) -> "Executor":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class SerialExecutor(Executor):
    """Evaluate in this process, in item order."""

    name = "serial"

    def map_unordered(self, fn, items):
        for item in items:
            yield fn(item)


class LocalExecutor(Executor):
    """A pool of ``max_workers`` processes on this machine (default: the CPU count)."""

    name = "local"

    def __init__(self, max_workers: int | None = None):
        self.max_workers = max_workers or os.cpu_count() or 1
        self._pool = None

    def map_unordered(self, fn, items):
        import concurrent.futures as cf
        import multiprocessing as mp

        if not items:
            return
        workers = max(1, min(self.max_workers, len(items)))
        self._pool = cf.ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn"))
        futures = [self._pool.submit(fn, it) for it in items]
        try:
            for fut in cf.as_completed(futures):
                yield fut.result()
        finally:
            for fut in futures:
                fut.cancel()

    def close(self):
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


def _need(module: str, extra: str, executor: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise ClusterSimError(f"--executor {executor} needs {module.split('.')[0]}: pip install 'clustersim[{extra}]'",
                              field="--executor") from None


class DaskExecutor(Executor):
    """Points as Dask futures on a distributed cluster.

    Parameters
    ----------
    address: scheduler address (``tcp://host:8786``); None starts a ``LocalCluster`` of
        ``max_workers`` single-threaded worker processes here.
    """

    name = "dask"

    def __init__(self, address: str | None = None, max_workers: int | None = None):
        distributed = _need("distributed", "distributed", "dask")
        self._cluster = None
        try:
            if address:
                self.client = distributed.Client(address, timeout="30s")
            else:
                self._cluster = distributed.LocalCluster(n_workers=max_workers or os.cpu_count() or 1,
                                                         threads_per_worker=1, processes=True,
                                                         dashboard_address=None)
                self.client = distributed.Client(self._cluster)
        except OSError as exc:
            self.close()
            raise ClusterSimError(f"cannot reach the Dask scheduler at {address}: {exc}", field="--address") from None

    def map_unordered(self, fn, items):
        from distributed import as_completed

        if not items:
            return
        futures = self.client.map(fn, list(items), pure=False)
        try:
            for fut in as_completed(futures):
                yield fut.result()
        finally:
            self.client.cancel(futures)

    def close(self):
        client = getattr(self, "client", None)
        if client is not None:
            client.close()
            self.client = None
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None


class SlurmExecutor(Executor):
    """Points as the tasks of one Slurm job array (submitit), at most ``max_jobs`` running at once.

    Parameters
    ----------
    folder: where submitit keeps pickled tasks, results and job logs (must be visible to the nodes).
    max_jobs: cap on concurrently running array tasks (``--array=0-N%max_jobs``).
    partition: Slurm partition (default: the cluster's default partition).
    time_min: time limit of each task in minutes.
    poll_s: seconds between checks for finished tasks.
    """

    name = "slurm"

    def __init__(self, folder: str | Path, max_jobs: int | None = None, partition: str | None = None,
                 time_min: int = 60, poll_s: float = 2.0, job_name: str = "clustersim-sweep"):
        self.submitit = _need("submitit", "distributed", "slurm")
        import logging
        import sys

        # submitit logs to stdout as well as stderr; stdout belongs to the command (--json)
        log = logging.getLogger("submitit")
        log.handlers = [h for h in log.handlers if getattr(h, "stream", None) is not sys.stdout]
        self.folder = Path(folder)
        self.max_jobs = max_jobs or 64
        self.partition = partition
        self.time_min = time_min
        self.poll_s = poll_s
        self.job_name = job_name
        self._jobs: list = []

    def _executor(self):
        ex = self.submitit.SlurmExecutor(folder=str(self.folder / "%j"), max_num_timeout=0)
        params: dict[str, Any] = {"array_parallelism": self.max_jobs, "time": self.time_min, "ntasks_per_node": 1,
                                  "cpus_per_task": 1, "job_name": self.job_name, "wckey": None}
        if self.partition:
            params["partition"] = self.partition
        ex.update_parameters(**params)
        return ex

    def map_unordered(self, fn, items):
        if not items:
            return
        try:
            self._jobs = self._executor().map_array(fn, list(items))
        except Exception as exc:  # submitit raises plain Exceptions carrying sbatch's message
            raise ClusterSimError(f"sbatch failed: {str(exc).strip()[-400:]}", field="--executor") from None
        pending = {job.job_id: job for job in self._jobs}
        missing: set[str] = set()  # tasks Slurm no longer lists that have no result yet
        last_check = time.monotonic()
        while pending:
            # a task is finished once submitit's result file exists; no sacct needed (clusters without
            # accounting have none), so the queue is asked only to notice tasks that died without one
            finished = [jid for jid, job in pending.items() if job.paths.result_pickle.exists()]
            for jid in finished:
                yield _result(pending.pop(jid))
            if pending and not finished:
                if time.monotonic() - last_check > 5 * self.poll_s:
                    last_check = time.monotonic()
                    gone = self._not_queued(set(pending))
                    dead = gone & missing  # absent twice in a row: not a result file still being written
                    if dead:
                        job = pending[sorted(dead)[0]]
                        raise ClusterSimError(f"Slurm task {job.job_id} ended without a result (log: {job.paths.stderr})",
                                              field="--executor")
                    missing = gone
                time.sleep(self.poll_s)
        self._jobs = []

    @staticmethod
    def _not_queued(job_ids: set[str]) -> set[str]:
        """The ids among ``job_ids`` that squeue no longer lists (empty when squeue cannot tell)."""
        import subprocess

        arrays = sorted({j.split("_")[0] for j in job_ids})
        r = subprocess.run(["squeue", "-h", "-r", "-o", "%i", "-j", ",".join(arrays)], capture_output=True, text=True)
        if r.returncode != 0:
            return set()
        return job_ids - set(r.stdout.split())

    def close(self):
        # an interrupted sweep cancels what it left queued or running; finished points are in the journal
        for job in self._jobs:
            if not job.done():
                try:
                    job.cancel(check=False)
                except Exception:  # noqa: BLE001 - scancel of a job that just ended; nothing to undo
                    pass
        self._jobs = []


def _result(job) -> Any:
    """A finished submitit job's value; a task that raised becomes one error naming its log."""
    try:
        return job.result()
    except Exception as exc:  # noqa: BLE001 - submitit's FailedJobError carries the worker's traceback
        raise RuntimeError(f"Slurm task {job.job_id} failed (log: {job.paths.stderr}):\n{exc}") from None


def make_executor(name: str, *, address: str | None = None, max_jobs: int | None = None,
                  folder: str | Path | None = None, partition: str | None = None) -> Executor:
    """The executor called ``name`` (one of :data:`EXECUTORS`)."""
    if max_jobs is not None and max_jobs < 1:
        raise ClusterSimError(f"--max-jobs must be >= 1, got {max_jobs}", field="--max-jobs")
    if address and name != "dask":
        raise ClusterSimError("--address needs --executor dask", field="--address")
    if partition and name != "slurm":
        raise ClusterSimError("--partition needs --executor slurm", field="--partition")
    if name == "serial":
        return SerialExecutor()
    if name == "local":
        return LocalExecutor(max_jobs)
    if name == "dask":
        return DaskExecutor(address, max_jobs)
    if name == "slurm":
        return SlurmExecutor(folder or Path("slurm-jobs"), max_jobs=max_jobs, partition=partition)
    raise ClusterSimError(f"unknown executor {name!r} (use {', '.join(EXECUTORS)})", field="--executor")
