"""Several jobs on one cluster (a scenario's ``jobs:`` list): each job's size, where it runs, and the
rules that need all of them together.

A ``jobs:`` entry (:class:`~clustersim.config.sections.JobEntry`) holds the sections a one-job
scenario has (``model`` or ``job``, ``training``, ``parallelism``) and a ``placement``. Each entry
becomes a one-job :class:`~clustersim.config.scenario.Scenario`
(:func:`~clustersim.config.scenario.job_scenario`) on the parent's ``cluster:`` and
``simulation:`` sections, so every rule of a one-job scenario applies to it unchanged. The rules
between jobs:

* names are unique; a generic job gives its size (``job.ranks``) or an explicit placement;
* an explicit placement lists as many distinct GPUs as the job has ranks, and no GPU is in two
  jobs' lists (:func:`check_placement`, file only);
* the ranks exist and the jobs together fit the cluster (:func:`check_jobs_fit`, needs the GPU count);
* :func:`place_jobs` turns ``packed`` and ``spread`` into GPU lists: explicit lists first, then the
  other jobs in file order on the GPUs still free.

The rules that need only the file run when a scenario is validated
(:func:`clustersim.config.scenario.check_jobs_section`); this module reads the entries alone, so
the scenario imports it and not the other way round.

>>> from clustersim.config.scenario import Scenario
>>> sc = Scenario.model_validate({"name": "two", "cluster": {"topology": "dgx-h100", "nodes": 2}, "jobs": [
...     {"name": "a", "job": {"ranks": 4, "phases": [{"name": "w", "compute": {"seconds": 1.0}}]}, "placement": "spread"},
...     {"name": "b", "job": {"ranks": 4, "phases": [{"name": "w", "compute": {"seconds": 1.0}}]}, "placement": "packed"}]})
>>> place_jobs(sc.jobs, [0] * 8 + [1] * 8)
[[0, 1, 8, 9], [2, 3, 4, 5]]
"""

from __future__ import annotations

from typing import Sequence

from clustersim.config.sections import JobEntry
from clustersim.errors import ClusterSimError


def job_size(entry: JobEntry) -> int | None:
    """GPUs a job runs on: dp*tp*pp*cp of a model, ``job.ranks`` or the length of an explicit placement."""
    if entry.model is not None:
        p = entry.parallelism
        return p.dp * p.tp * p.pp * p.cp
    if entry.job is not None and entry.job.ranks is not None:
        return entry.job.ranks
    if isinstance(entry.placement, list):
        return len(entry.placement)
    return None


def check_placement(entry: JobEntry, index: int, size: int, taken: dict[int, str]) -> None:
    """An explicit placement (``jobs.<index>.placement``) lists ``size`` distinct GPUs, none in ``taken``
    (GPU -> the job placed there by an earlier entry), which it then joins; ``packed``/``spread`` pass."""
    if not isinstance(entry.placement, list):
        return
    where = f"jobs.{index}.placement"
    if not entry.placement:
        raise ClusterSimError("an explicit placement lists at least one GPU", field=where)
    if len(entry.placement) != size:
        raise ClusterSimError(f"lists {len(entry.placement)} GPUs but the job has {size} ranks", field=where)
    dup = sorted({r for r in entry.placement if entry.placement.count(r) > 1})
    if dup:
        raise ClusterSimError(f"lists GPU(s) {dup} more than once", field=where)
    for r in entry.placement:
        if r in taken:
            raise ClusterSimError(f"GPU {r} is placed in job {taken[r]!r} too (jobs may not share a GPU)", field=where)
        taken[r] = entry.name


def check_jobs_fit(jobs: Sequence[JobEntry], n_gpus: int, file: str | None = None) -> None:
    """The jobs' explicit GPUs exist and all jobs together fit the ``n_gpus`` GPUs of the cluster."""
    total = 0
    for i, e in enumerate(jobs):
        n = job_size(e)
        total += n
        if isinstance(e.placement, list):
            bad = [r for r in e.placement if r >= n_gpus]
            if bad:
                raise ClusterSimError(f"GPU(s) {bad} do not exist (the cluster has GPUs 0..{n_gpus - 1})",
                                      file=file, field=f"jobs.{i}.placement")
    if total > n_gpus:
        sizes = " + ".join(str(job_size(e)) for e in jobs)
        raise ClusterSimError(f"the jobs need {sizes} = {total} GPUs but the cluster has {n_gpus}", file=file, field="jobs")


def place_jobs(jobs: Sequence[JobEntry], host_of: Sequence[int]) -> list[list[int]]:
    """GPU ranks of every job (its local rank ``i`` runs on GPU ``result[job][i]``), given the host of each GPU.

    Explicit lists first; then, in file order on the free GPUs, ``packed`` takes the lowest ones
    and ``spread`` deals the job's GPUs one at a time to each host with free GPUs in turn (so the
    shares differ by at most one where capacity allows), each host's share contiguous in the job's
    rank order (its innermost axis, TP, stays inside a node).
    """
    hosts = [int(h) for h in host_of]
    n = len(hosts)
    check_jobs_fit(jobs, n)
    out: list[list[int] | None] = [list(e.placement) if isinstance(e.placement, list) else None for e in jobs]
    free = sorted(set(range(n)) - {r for p in out if p is not None for r in p})
    for i, e in enumerate(jobs):
        if out[i] is not None:
            continue
        size = job_size(e)
        if size > len(free):
            raise ClusterSimError(f"needs {size} GPUs but only {len(free)} are free after the jobs before it",
                                  field=f"jobs.{i}.placement")
        if e.placement == "packed":
            pick = free[:size]
        else:
            by_host: dict[int, list[int]] = {}
            for r in free:
                by_host.setdefault(hosts[r], []).append(r)
            order = sorted(by_host)
            count = dict.fromkeys(order, 0)
            left = size
            while left:
                for h in order:
                    if left and count[h] < len(by_host[h]):
                        count[h] += 1
                        left -= 1
            pick = [r for h in order for r in by_host[h][:count[h]]]
        out[i] = pick
        taken = set(pick)
        free = [r for r in free if r not in taken]
    return [list(p) for p in out]
