"""Generic jobs: per-rank phases of compute, collectives and host time (the scenario ``job:`` section).

Semantics: every rank runs the phase list ``iterations`` times; a phase runs ``repeat`` times on
the ranks it names (default all). Compute takes ``seconds`` when given, else the roofline
``max(flops / (peak(dtype) * efficiency), bytes / HBM bandwidth)`` plus one kernel launch
(``divide_among_ranks`` splits job totals evenly over the phase's ranks). A collective is a
blocking call on the rank's stream (like ``ncclAllReduce`` followed by a synchronise in simple
programs): it starts when every member has reached it and the next phase waits for it.
``host_seconds`` keeps the GPU idle (initialisation, I/O, Python).
"""

from __future__ import annotations

from clustersim.errors import ClusterSimError
from clustersim.units import parse_size
from clustersim.workload.layout import Layout
from clustersim.workload.ops import Coll, Graph


def job_groups(group, ranks: list[int], host_of, layout=None) -> list[list[int]]:
    """The rank groups a collective phase runs in (one collective per group)."""
    if isinstance(group, list):
        bad = [r for r in group if r not in ranks]
        if bad:
            raise ClusterSimError(f"collective group names ranks {bad} that do not run the job", field="job.phases")
        return [sorted(group)]
    if group == "all":
        return [list(ranks)]
    if group == "node":
        by: dict[int, list[int]] = {}
        for r in ranks:
            by.setdefault(int(host_of[r]), []).append(r)
        return [v for _, v in sorted(by.items())]
    if layout is None:
        if group == "dp":
            return [list(ranks)]
        raise ClusterSimError(f"group {group!r} needs parallelism degrees whose product is the job's rank count",
                              field="job.phases")
    others = [a for a in ("tp", "cp", "ep", "dp", "pp") if a != group]
    seen, out = set(), []
    for r in ranks:
        coords = layout.coords(r)
        key = tuple(coords[a] for a in others)
        if key in seen:
            continue
        seen.add(key)
        out.append(layout.group(group, **{a: coords[a] for a in others}))
    return out


def build_job(scenario, cluster, compute_for_dtype, efficiency_default: float, host_of) -> tuple[Graph, list[int]]:
    """The op DAG of a generic job; returns the graph and its ranks.

    ``compute_for_dtype(dtype)`` returns a :class:`clustersim.workload.compute.ComputeModel`.
    """
    job = scenario.job
    n = job.ranks or cluster.n_gpus
    ranks = list(range(n))
    layout = None
    par = scenario.parallelism
    if par.dp * par.tp * par.pp * par.cp * par.ep == n:
        layout = Layout.from_parallelism(par)
    g = Graph()
    for it in range(job.iterations):
        for pi, ph in enumerate(job.phases):
            pr = ph.ranks if ph.ranks is not None else ranks
            bad = [r for r in pr if r not in ranks]
            if bad:
                raise ClusterSimError(f"phase {ph.name!r} names ranks {bad} outside 0..{n - 1}",
                                      field=f"job.phases.{pi}.ranks")
            for _ in range(ph.repeat):
                if ph.compute is not None:
                    c = ph.compute
                    cm = compute_for_dtype(c.dtype)
                    if c.seconds is not None:
                        dur = c.seconds
                    else:
                        share = len(pr) if c.divide_among_ranks else 1
                        eff = c.efficiency if c.efficiency is not None else efficiency_default
                        t_f = (c.flops or 0.0) / share / (cm.peak_flops * eff)
                        t_b = (c.bytes or 0.0) / share / cm.hbm_bandwidth
                        dur = max(t_f, t_b) + cm.kernel_launch_s
                    for r in pr:
                        g.add(r, "compute", ph.name, "compute", duration=dur, iteration=it)
                elif ph.host_seconds is not None:
                    for r in pr:
                        g.add(r, "compute", ph.name, "host", duration=ph.host_seconds, iteration=it)
                else:
                    c = ph.collective
                    try:
                        size = parse_size(c.size)
                    except ClusterSimError as exc:
                        raise ClusterSimError(exc.reason, field=f"job.phases.{pi}.collective.size") from None
                    groups = job_groups(c.group, pr, host_of, layout)
                    axis = c.group if c.group in ("dp", "tp", "pp") else "dp"
                    for grp in groups:
                        if len(grp) < 2 and c.op != "barrier":
                            continue
                        g.add(grp[0], "compute", f"{ph.name} {c.op}", "comm_" + axis,
                              coll=Coll(c.op, [grp], size, axis),
                              extra_streams=[(r, "compute") for r in grp[1:]], iteration=it)
    return g, ranks
