"""Fabric presets at today's largest scales (issue 15, Scale).

* topologies/colossus-h100.yaml: 100,000 H100 on a three-tier 400 GbE fat tree of radix 128.
* topologies/gb200-nvl72-superpod.yaml: 144 NVL72 racks, 10,368 GPUs.
* scenarios/llama3-405b-100k.yaml: Llama 3 405B on 12,800 nodes (102,400 GPUs), refused before these
  presets ("12800 nodes need 100 pods of 32 leaf switches; a 3-tier fat tree of radix 64 holds at
  most 64 pods"). Its flow-fidelity wall time is measured in benchmarks/scale_growth.py, not here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from clustersim.errors import ClusterSimError
from clustersim.simulate.run import run_scenario
from clustersim.topology import load_cluster

ROOT = Path(__file__).resolve().parents[2]


def test_colossus_preset_holds_100k_gpus_on_three_tiers():
    c = load_cluster("colossus-h100")
    assert c.n_gpus == 100_000
    ft = c.fabric
    assert (ft.tiers, ft.k, ft.rail_optimized) == (3, 128, True)
    # every leaf has as many up-links as down-links (1:1): d = u = 64 at radix 128
    assert ft.d == ft.u == 64


def test_gb200_superpod_preset_holds_10k_gpus_in_nvlink_racks():
    c = load_cluster("gb200-nvl72-superpod")
    assert c.n_gpus == 144 * 72 >= 10_000
    assert c.fabric.tiers == 3


def test_the_radix_64_fabric_still_refuses_12800_nodes():
    """The DGX H100 SuperPOD preset (radix 64) cannot hold 12,800 nodes; the error names the fix."""
    with pytest.raises(ClusterSimError, match="larger switch_radix"):
        load_cluster("dgx-h100-superpod", nodes=12800)


def test_llama3_405b_on_102400_gpus_runs_and_its_dp_traffic_crosses_the_core():
    res = run_scenario(ROOT / "scenarios" / "llama3-405b-100k.yaml", fidelity="analytical", top_links=200)
    assert res.n_gpus == 102_400
    assert res.step_time_s > 0 and 0 < res.mfu < 1
    # the data-parallel reduce-scatter/all-gather of 800 replicas spans pods: core links carry traffic
    links = res.to_dict()["links"]
    assert any(link["link"].startswith("core") and link["busy_fraction"] > 0 for link in links)
    assert {link["kind"] for link in links if link["link"].startswith(("leaf", "agg", "core"))} == {"ethernet"}
