"""Generic jobs: per-rank phases of compute, collectives and host time (the scenario ``job:`` section).

Semantics: every rank runs the phase list ``iterations`` times; a phase runs ``repeat`` times on
the ranks it names (default all). Compute takes ``seconds`` when given, else the roofline
``max(flops / (peak(dtype) * efficiency), bytes / HBM bandwidth)`` plus one kernel launch
(``divide_among_ranks`` splits job totals evenly over the phase's ranks). A collective is a
blocking call on the rank's stream (like ``ncclAllReduce`` followed by a synchronise in simple
programs): it starts when every member has reached it and the next phase waits for it; its
``algorithm``/``protocol`` (``NCCL_ALGO``/``NCCL_PROTO``) are checked here against what the
collective model knows for the op (:func:`check_collective_choice`) and honoured by both
fidelities. ``host_seconds`` keeps the GPU idle (initialisation, I/O, Python).

Two measured costs of running one program on several GPUs enter a job when the profile holds
them (``profile``: none given, neither): a compute phase whose work is split over n GPUs
(``divide_among_ranks``, strong scaling) ends with its slowest GPU, ``x (1 +
compute.device_spread x E[max of n standard normals])`` (:func:`expected_max_normal`); and, when
the job is timed from fresh communicators (``job.fresh_communicators``), the first collective of
each communicator waits ``host.first_collective_us`` for NCCL's peer connection and kernel load,
as an idle (``host``) gap on its members before it.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from clustersim.collectives.formulas import PROTOCOLS
from clustersim.collectives.model import OP_ALGOS, normalise_algorithm
from clustersim.errors import ClusterSimError
from clustersim.units import parse_size
from clustersim.workload.layout import Layout
from clustersim.workload.ops import Coll, Graph


@functools.lru_cache(maxsize=None)
def expected_max_normal(n: int) -> float:
    """E[max of n independent standard normals]: how far, in standard deviations, the slowest of n GPUs
    lags the mean (the integral of ``x n phi(x) Phi(x)^(n-1)``, by quadrature on [-10, 10]).

    >>> [round(expected_max_normal(n), 4) for n in (1, 2, 4, 8)]
    [0.0, 0.5642, 1.0294, 1.4236]
    """
    if n <= 1:
        return 0.0
    x = np.linspace(-10.0, 10.0, 20001)
    pdf = np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
    cdf = 0.5 * (1.0 + np.array([math.erf(v / math.sqrt(2.0)) for v in x]))
    return float(np.sum(x * n * pdf * cdf ** (n - 1)) * (x[1] - x[0]))


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


def check_collective_choice(op: str, algorithm: str, protocol: str, field: str) -> tuple[str, str]:
    """The canonical (algorithm, protocol) of a job phase's collective, or a :class:`ClusterSimError`
    naming ``field`` when the name is unknown for ``op``.

    Aliases resolve as ``clustersim collective`` resolves them (``NVLSTree`` -> ``nvls_tree``).

    >>> check_collective_choice("all_reduce", "Ring", "LL", "job.phases.0.collective")
    ('ring', 'll')
    >>> check_collective_choice("all_reduce", "no_such_algo", "auto", "job.phases.0.collective")
    Traceback (most recent call last):
    ...
    clustersim.errors.ClusterSimError: job.phases.0.collective.algorithm: all_reduce has no algorithm 'no_such_algo' (choose auto, ring, tree, nvls, nvls_tree, halving_doubling, hierarchical)
    """
    algo = normalise_algorithm(algorithm)
    if algo != "auto" and algo not in OP_ALGOS[op]:
        raise ClusterSimError(f"{op} has no algorithm {algorithm!r} (choose auto, {', '.join(OP_ALGOS[op])})",
                              field=f"{field}.algorithm")
    proto = (protocol or "auto").strip().lower()
    if proto not in ("auto",) + tuple(PROTOCOLS):
        raise ClusterSimError(f"unknown protocol {protocol!r} (choose auto, {', '.join(PROTOCOLS)})",
                              field=f"{field}.protocol")
    return algo, proto


def build_job(scenario, cluster, compute_for_dtype, efficiency_default: float, host_of,
              comm_time=None, profile=None) -> tuple[Graph, list[int]]:
    """The op DAG of a generic job; returns the graph and its ranks.

    ``compute_for_dtype(dtype)`` returns a :class:`clustersim.workload.compute.ComputeModel`.
    ``comm_time`` (a :class:`~clustersim.simulate.execute.CommCache`-like callable), when given,
    prices each phase's collective once while the graph is built, so that an algorithm or protocol
    the topology cannot run (``nvls`` without NVSwitch, ``tree`` on one rank pair...) is reported
    with the phase's field path instead of failing in the middle of a simulation. ``profile``: the
    run's :class:`~clustersim.config.profile.Profile`, for the spread and first-collective costs above.
    """
    spread = profile.compute.device_spread if profile is not None else 0.0
    started: set[tuple[int, ...]] = set()     # communicators that ran a collective already
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
                        if c.divide_among_ranks and spread:
                            dur *= 1.0 + spread * expected_max_normal(len(pr))
                    for r in pr:
                        g.add(r, "compute", ph.name, "compute", duration=dur, iteration=it)
                elif ph.host_seconds is not None:
                    for r in pr:
                        g.add(r, "compute", ph.name, "host", duration=ph.host_seconds, iteration=it)
                else:
                    c = ph.collective
                    where = f"job.phases.{pi}.collective"
                    try:
                        size = parse_size(c.size)
                    except ClusterSimError as exc:
                        raise ClusterSimError(exc.reason, field=f"{where}.size") from None
                    algo, proto = check_collective_choice(c.op, c.algorithm, c.protocol, where)
                    groups = job_groups(c.group, pr, host_of, layout)
                    axis = c.group if c.group in ("dp", "tp", "pp") else "dp"
                    for grp in groups:
                        if len(grp) < 2 and c.op != "barrier":
                            continue
                        coll = Coll(c.op, [grp], size, axis, algo, proto)
                        first = (profile.host.first_collective_us_at(len(grp))
                                 if profile is not None and job.fresh_communicators else None)
                        if first and tuple(grp) not in started:
                            for r in grp:   # NCCL connects the communicator's peers at its first collective
                                g.add(r, "compute", f"{ph.name} first {c.op}", "host", duration=first * 1e-6,
                                      iteration=it)
                        started.add(tuple(grp))
                        if comm_time is not None and (algo, proto) != ("auto", "auto") and (it, grp) == (0, groups[0]):
                            try:  # the forced choice must exist on this group (NVLS needs NVSwitch, ...)
                                comm_time(coll)
                            except ClusterSimError as exc:
                                raise ClusterSimError(exc.reason, field=where) from None
                        g.add(grp[0], "compute", f"{ph.name} {c.op}", "comm_" + axis, coll=coll,
                              extra_streams=[(r, "compute") for r in grp[1:]], iteration=it)
    return g, ranks
