"""Every forced algorithm / protocol choice is monotone in size on every shipped topology (issue 36).

A user forcing ``NCCL_ALGO`` / ``NCCL_PROTO`` (``collective --algorithm ring``) must never see a collective get
faster as it grows: on 16 DGX H100 nodes a forced ring ran LL at 2 MiB in 1,131.6 us and LL128 at 4 MiB in
591.9 us, because the channel throttle of small sizes divided LL's capped bandwidth (``llMaxBw``, a cap of the
whole call) as if it were the channels' own (clustersim.collectives.formulas.throttle_fraction, ``headroom``).

Every shipped topology, with its default profile (entries, link model or NCCL's model, whatever answers), on
one node and on 16 nodes where it has NICs, every op of NCCL's table and the point-to-point ones, every
algorithm the op has and every protocol, 1 KiB - 1 GiB in factors of 2: analytical estimates only (a few
seconds in all).
"""

from __future__ import annotations

import functools

import pytest

from clustersim.collectives.model import OP_ALGOS, CollectiveModel
from clustersim.collectives.profiles import load_profile_for
from clustersim.config.base import shipped_names
from clustersim.errors import ClusterSimError
from clustersim.topology import load_cluster

SIZES = [2.0 ** k for k in range(10, 31)]
OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all", "send_recv")
#: rounding of an entry's interpolation or a smooth minimum, not a fall: 0.01%
TOLERANCE = 1e-4


@functools.cache
def _model(topology: str, nodes: int) -> CollectiveModel:
    cluster = load_cluster(topology, nodes=nodes)
    return CollectiveModel(cluster, load_profile_for(cluster))


#: where NCCL's own table switches protocol (LL -> LL128 / Simple between 2 and 4 MiB) while the profile's fitted
#: link model (azure-ndv4 on A100 logs, hgx-h200 on the H200 bench) prices the cell after the switch below the one
#: before it: the time falls 2-6% there (the measured 2x H200 all_reduce rises at its switch, 16.6 -> 30.5 us); the
#: link model keeps NCCL's decision, so it stays, and is kept in sight as a strict xfail
LINK_MODEL_SWITCH = {("azure-ndv4", 1), ("azure-ndv4", 16), ("hgx-h200", 1)}


def _cases(known=frozenset()):
    for topo in shipped_names("topology"):
        for nodes in (1, 16):
            marks = [pytest.mark.xfail(strict=True, reason="link model at NCCL's protocol switch")] \
                if (topo, nodes) in known else []
            yield pytest.param(topo, nodes, id=f"{topo}-{nodes}n", marks=marks)


def _falls(model: CollectiveModel, n: int, choices) -> list[str]:
    """Every step of 2x in size at which the time of one (op, algorithm, protocol) choice falls."""
    falls = []
    for op, algo, proto in choices:
        prev = None
        for S in SIZES:
            try:
                t = model.estimate(op, n, S, algo, proto).time_s
            except ClusterSimError:  # not available there (NVLS off, LL128 of a p2p op, ...)
                break
            if prev is not None and t < prev[1] * (1 - TOLERANCE):
                falls.append(f"{op} {algo}/{proto}: {prev[0]:.0f} B {prev[1] * 1e6:.1f} us -> "
                             f"{S:.0f} B {t * 1e6:.1f} us")
            prev = (S, t)
    return falls


def _model_or_skip(topology: str, nodes: int) -> CollectiveModel:
    try:
        return _model(topology, nodes)
    except ClusterSimError as exc:   # a one-node preset without NICs cannot be replicated
        pytest.skip(str(exc))


@pytest.mark.parametrize("topology,nodes", list(_cases()))
def test_every_forced_algorithm_and_protocol_is_monotone_in_size(topology, nodes):
    """NCCL_ALGO and NCCL_PROTO both set: one cell of NCCL's table (or one generic algorithm)."""
    model = _model_or_skip(topology, nodes)
    n = model.cluster.n_gpus
    choices = [(op, a, p) for op in OPS for a in OP_ALGOS[op] for p in ("ll", "ll128", "simple")]
    falls = _falls(model, n, choices)
    assert not falls, f"{topology} x {nodes} node(s), {n} GPUs: " + "; ".join(falls[:6])


@pytest.mark.parametrize("topology,nodes", list(_cases(LINK_MODEL_SWITCH)))
def test_every_forced_algorithm_is_monotone_in_size(topology, nodes):
    """NCCL_ALGO set, the protocol NCCL's table picks (the case of the issue: ring on 16 DGX H100 nodes).

    Not broadcast / reduce: on 64+ ranks NCCL's table picks ring LL up to 64-128 KiB (by its model time,
    before throttling), whose throttled run (LL's thread threshold is x nRanks on rings) the channel model
    prices 2-5x above LL128's at twice the size; how fast a thread-starved LL broadcast really runs was
    never measured (docs/calibration.md, issue 36)."""
    model = _model_or_skip(topology, nodes)
    n = model.cluster.n_gpus
    choices = [(op, a, "auto") for op in OPS if op not in ("broadcast", "reduce") for a in OP_ALGOS[op]]
    falls = _falls(model, n, choices)
    assert not falls, f"{topology} x {nodes} node(s), {n} GPUs: " + "; ".join(falls[:6])


def test_the_forced_ring_of_the_issue():
    """all_reduce --algorithm ring on 16 DGX H100 nodes: LL at 2 MiB no slower than LL128 at 4 MiB."""
    model = _model("dgx-h100", 16)
    t2, t4 = (model.estimate("all_reduce", 128, s, "ring") for s in (2 * 2**20, 4 * 2**20))
    assert (t2.protocol, t4.protocol) == ("ll", "ll128") and t2.time_s < t4.time_s
