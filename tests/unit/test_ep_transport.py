"""parallelism.ep_transport: NCCL all-to-all vs NVSHMEM one-sided puts for the MoE dispatch/combine."""

from __future__ import annotations

from pathlib import Path

import pytest

from clustersim.collectives import CollectiveModel
from clustersim.collectives import formulas as F
from clustersim.collectives.flow import flow_simulation
from clustersim.errors import ClusterSimError
from clustersim.simulate.run import run_scenario
from clustersim.workload.segments import TPCollectiveSegment

ROOT = Path(__file__).resolve().parents[2]
MIXTRAL = ROOT / "scenarios" / "mixtral-8x7b-ep8.yaml"
SMALL = ["model.layers=4", "training.global_batch=128"]


@pytest.fixture(scope="module", params=[1, 2])
def model(request, shared_cluster, shared_profile):
    cluster = shared_cluster("dgx-h100", nodes=request.param)
    return CollectiveModel(cluster, shared_profile(cluster.default_profile))


def test_nvshmem_is_a_per_message_latency_plus_the_same_bandwidth(model):
    n = model.cluster.n_gpus
    ctx = model.context(model.ranks_of(n))
    for size in (4096, 2**20, 2**26):
        shm = model.estimate("all_to_all", n, size, "nvshmem")
        nccl = model.estimate("all_to_all", n, size)
        assert (shm.algorithm, nccl.algorithm) == ("nvshmem", "direct")
        assert shm.bandwidth_time_s == pytest.approx(nccl.bandwidth_time_s, rel=1e-12), \
            f"{size=}"  # same bytes, same links
        # no launch, no NCCL base latency: only the Low-Latency per-hop cost of the slowest class crossed
        hop = ctx.hop_inter[0] if ctx.nccl.nodes > 1 else ctx.hop_intra[0]
        assert shm.latency_s == pytest.approx(hop * 1e-6), f"{size=}"
        assert shm.latency_s < 5e-6 and nccl.latency_s > model.launch_s + F.BASE_LAT_US["ring"][2] * 1e-6, f"{size=}"
    small = model.estimate("all_to_all", n, 4096).time_s / model.estimate("all_to_all", n, 4096, "nvshmem").time_s
    big = model.estimate("all_to_all", n, 2**26).time_s / model.estimate("all_to_all", n, 2**26, "nvshmem").time_s
    assert small > 8 and 1.0 < big < 1.1  # latency-bound vs bandwidth-bound


def test_flow_takes_the_closed_form_time_uncontended(model):
    n = model.cluster.n_gpus
    sim = flow_simulation(model.cluster, model.profile)
    p = sim.collective("all_to_all", list(range(n)), 2**20, algorithm="nvshmem")
    sim.env.run()
    assert p.value.time_s == pytest.approx(model.estimate("all_to_all", n, 2**20, "nvshmem").time_s, rel=1e-9)


def test_forced_protocol_with_nvshmem_is_refused(model):
    with pytest.raises(ClusterSimError):
        model.estimate("all_to_all", model.cluster.n_gpus, 4096, "nvshmem", "ll")


@pytest.mark.parametrize("fidelity", ["analytical", "flow"])
def test_mixtral_dispatch_over_nvshmem_is_cheaper(fidelity):
    nccl = run_scenario(MIXTRAL, fidelity=fidelity, overrides=SMALL)
    shm = run_scenario(MIXTRAL, fidelity=fidelity, overrides=SMALL + ["parallelism.ep_transport=nvshmem"],
                       keep_timeline=True)
    assert 0 < shm.breakdown["comm_ep"] < nccl.breakdown["comm_ep"]
    assert shm.step_time_s < nccl.step_time_s
    assert shm.extra["moe"]["transport"] == "nvshmem" and "transport" not in nccl.extra["moe"]
    ep = {s.coll.algorithm for op in shm.step.graph.ops for s in op.segments or ()
          if isinstance(s, TPCollectiveSegment) and s.coll.axis == "ep"}
    assert ep == {"nvshmem"}


def test_nvshmem_needs_the_alltoall_dispatcher():
    with pytest.raises(ClusterSimError) as err:
        run_scenario(MIXTRAL, fidelity="analytical",
                     overrides=SMALL + ["parallelism.ep_transport=nvshmem", "parallelism.ep_dispatcher=allgather"])
    assert "ep_dispatcher: alltoall" in err.value.reason
