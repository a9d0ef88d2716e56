"""Configurations of issue 33 that are a preset or a cluster field: GB300 NVL72, H100 96GB HBM2e at 500 W,
rack-aware placement (cluster.gpus_per_node), and one shipped scenario per category."""

from __future__ import annotations

from pathlib import Path

import pytest

from clustersim.config.base import load_model
from clustersim.config.scenario import Scenario
from clustersim.config.topology import gpu_spec
from clustersim.errors import ClusterSimError
from clustersim.simulate.run import run_scenario
from clustersim.topology.cluster import load_cluster
from clustersim.workload.moe import expert_groups

ROOT = Path(__file__).resolve().parents[2]
REF_DDP2 = ROOT / "scenarios" / "ref-ddp2.yaml"


def test_gpu_variants_carry_their_datasheet_figures():
    gb300, h96, h80 = gpu_spec("GB300"), gpu_spec("H100-SXM-96GB"), gpu_spec("H100-SXM")
    assert (gb300.hbm_GB, gb300.hbm_bandwidth_GBps, gb300.tdp_W, gb300.sm_count) == (288, 8000, 1400, 160)
    assert gb300.peak_flops("bf16") == 2.5e15 and gb300.peak_flops("fp8") == 5e15
    assert (h96.hbm_GB, h96.hbm_bandwidth_GBps, h96.tdp_W) == (96, 2400, 500)
    assert h96.peak_tflops == h80.peak_tflops and h96.sm_count == h80.sm_count  # the same GH100 SXM5 part
    for g in (gb300, h96):
        assert g.source


def test_presets_build_with_their_profiles(shared_cluster):
    rack = shared_cluster("gb300-nvl72")
    assert rack.n_gpus == 72 and rack.gpu_spec.name == "GB300"
    teton = load_cluster("grand-teton-h100", nodes=2)
    assert teton.gpu_spec.name == "H100-SXM-96GB" and teton.n_gpus == 16


def test_gpus_per_node_places_ranks_per_node():
    c = load_cluster("dgx-h100-superpod", nodes=2)
    assert list(c.host_of[:8]) == [0] * 8
    from clustersim.topology.cluster import Cluster

    per = Cluster(c.spec, nodes=2, gpus=8, gpus_per_node=4)
    assert list(per.host_of) == [0, 0, 0, 0, 1, 1, 1, 1] and per.gpus[4] == "h1.gpu0"
    assert per.ranks_per_host == 4 and per.path_class(3, 4) != per.path_class(0, 3)
    with pytest.raises(ClusterSimError, match="gpus_per_node"):
        Cluster(c.spec, nodes=2, gpus_per_node=9)
    with pytest.raises(ClusterSimError, match="in use"):
        Cluster(c.spec, nodes=2, gpus=12, gpus_per_node=4)


@pytest.mark.parametrize("fidelity", ["analytical", "flow"])
def test_gpus_per_node_moves_traffic_off_nvlink(fidelity):
    # two DDP ranks: one node (NVLink) by default, one per node with gpus_per_node 1 (the network)
    base = ["cluster.topology=dgx-h100-superpod", "cluster.nodes=2", "cluster.gpus=2"]
    one = run_scenario(REF_DDP2, fidelity=fidelity, overrides=base)
    two = run_scenario(REF_DDP2, fidelity=fidelity, overrides=[*base, "cluster.gpus_per_node=1"])
    assert two.breakdown["comm_dp"] > one.breakdown["comm_dp"]
    assert two.memory["peak_bytes_per_gpu"] == one.memory["peak_bytes_per_gpu"]


def test_one_ep_group_per_rack():
    sc = load_model(Scenario, ROOT / "scenarios" / "deepseek-v3-gb300-rack-ep.yaml")
    from clustersim.workload.layout import Layout

    lay = Layout.from_parallelism(sc.parallelism)
    c = load_cluster("gb300-nvl72-superpod", nodes=4)
    from clustersim.topology.cluster import Cluster

    rack = Cluster(c.spec, nodes=4, gpus=256, gpus_per_node=64)
    packed = Cluster(c.spec, nodes=4, gpus=256)
    for stage in range(4):
        group, _ = expert_groups(lay, 64, 1, 0, stage)
        assert len({int(rack.host_of[r]) for r in group}) == 1
    assert max(len({int(packed.host_of[r]) for r in expert_groups(lay, 64, 1, 0, s)[0]}) for s in range(4)) == 2


@pytest.mark.parametrize("name, check", [
    ("deepseek-v3-2048-h100", lambda s: s.parallelism.ep == 64 and s.parallelism.pp == 16 and s.model.moe.experts == 256),
    ("deepseek-v3-gb300-rack-ep", lambda s: s.cluster.gpus_per_node == 64 and "gb300" in s.cluster.topology),
    ("llama3-8b-torchtitan-h100-96gb", lambda s: s.cluster.topology == "grand-teton-h100" and s.parallelism.zero == 3),
    ("llama2-7b-ulysses-cp", lambda s: s.parallelism.cp_algorithm == "alltoall" and s.parallelism.cp == 4),
])
def test_category_scenarios_use_their_feature(name, check):
    # every shipped scenario runs: tests/integration/test_run.py::test_every_scenario_runs_analytical
    assert check(load_model(Scenario, ROOT / "scenarios" / f"{name}.yaml"))
