"""Link classes as an efficiency of the topology's line rate (profile schema, line rates, the collective model)."""

from __future__ import annotations

import pytest

from clustersim.collectives.linkrates import communicator_rates, effective_GBps, entry_scale, nccl_efficiency
from clustersim.collectives.model import CollectiveModel
from clustersim.config.base import validate
from clustersim.config.profile import LinkParams, Profile
from clustersim.config.topology import gpu_spec
from clustersim.errors import ClusterSimError
from clustersim.simulate.band import profile_at_bound
from clustersim.topology import load_cluster

GiB = 2**30


def test_link_params_forms():
    measured = LinkParams(latency_us=14, bandwidth_GBps=48, line_rate_GBps=50)
    given = LinkParams(latency_us=14, efficiency=0.96, line_rate_GBps=50)
    legacy = LinkParams(latency_us=14, bandwidth_GBps=48)
    assert measured.fraction == pytest.approx(0.96) and given.fraction == 0.96 and legacy.fraction is None
    assert measured.effective_GBps(50.0) == 48.0  # exactly the measured value on the measured line rate
    assert measured.effective_GBps(25.0) == pytest.approx(24.0) and given.effective_GBps(25.0) == pytest.approx(24.0)
    assert legacy.effective_GBps(25.0) == 48.0 and not legacy.scales  # old profiles: absolute
    assert measured.scales and given.scales


@pytest.mark.parametrize("bad,match", [
    ({"latency_us": 1}, "give efficiency"),
    ({"latency_us": 1, "efficiency": 0.9, "bandwidth_GBps": 40}, "not both"),
    ({"latency_us": 1, "bandwidth_GBps": 60, "line_rate_GBps": 50}, "exceeds line_rate_GBps"),
    ({"latency_us": 1, "efficiency": 1.2}, "less than or equal to 1"),
    ({"latency_us": 1, "efficiency": 0}, "greater than 0"),
])
def test_link_params_rejects(bad, match):
    with pytest.raises(ClusterSimError, match=match) as e:
        validate(Profile, {"name": "p", "links": {"network": bad}}, file="p.yaml")
    assert "links.network" in str(e.value)


def test_with_line_rates_records_only_bare_bandwidths():
    p = Profile(name="p", links={"nvlink": {"latency_us": 3, "bandwidth_GBps": 360},
                                 "network": {"latency_us": 14, "efficiency": 0.9}})
    q = p.with_line_rates({"nvlink": 450.0, "network": 50.0})
    assert q.links["nvlink"].line_rate_GBps == 450 and q.links["nvlink"].fraction == pytest.approx(0.8)
    assert q.links["network"] == p.links["network"]


def test_nccl_efficiencies():
    assert nccl_efficiency("nvlink", gpu_spec("H100-SXM")) == pytest.approx(20.6 / 25)
    assert nccl_efficiency("nvlink", gpu_spec("A100-SXM-80GB")) == pytest.approx(20.0 / 25)
    assert nccl_efficiency("nvlink", gpu_spec("GB200")) == pytest.approx(40.1 / 50)
    assert effective_GBps({}, "nvlink", 450.0, gpu_spec("H100-SXM")) == pytest.approx(370.8)
    assert effective_GBps({}, "pcie", 63.0, gpu_spec("H100-SXM")) == pytest.approx(48.0)
    assert effective_GBps({}, "network", 50.0, gpu_spec("H100-SXM")) == 50.0


def test_entry_scale():
    links = {"nvlink": LinkParams(latency_us=3.4, bandwidth_GBps=370.8, line_rate_GBps=450)}
    assert entry_scale(links, "nvlink", 450.0) == 1.0 and entry_scale(links, "nvlink", 225.0) == 2.0
    assert entry_scale(links, "network", 25.0) == 1.0  # no line rate recorded: unscaled
    assert entry_scale({"nvlink": LinkParams(latency_us=1, bandwidth_GBps=300)}, "nvlink", 150.0) == 1.0


def test_fabric_line_rate_only_where_the_ring_leaves_a_leaf(tmp_path, shared_cluster):
    slow = tmp_path / "slow.yaml"
    slow.write_text("extends: dgx-a100-superpod\nname: slow\ncluster: {fabric: {link_speed_Gbps: 100}}\n")
    c = load_cluster(slow, nodes=24)  # 20 nodes per leaf switch
    assert c.network_line_rate(range(20), [0]) == 25e9
    assert c.network_line_rate(range(21), [0]) == 12.5e9
    assert c.network_line_rate([0], [0]) == 25e9
    fast = shared_cluster("dgx-a100-superpod", nodes=24)
    assert fast.network_line_rate(range(24), [0, 3]) == 25e9


def test_gpudirect_path_bounds_the_nic(tmp_path, shared_cluster, shared_profile):
    """NCCL's GPU->NET path bandwidth is the minimum over its links: a slow PCIe hop to the NIC caps the NIC."""
    c = shared_cluster("dgx-h100", nodes=2)
    prof = shared_profile("dgx-h100")
    assert communicator_rates(c, prof.links, (0, 8)).nic_bw == 48.0
    gen4 = tmp_path / "gen4.yaml"
    gen4.write_text("extends: dgx-h100\nname: gen4\nnode:\n  links:\n"
                    "    - {src: \"gpu[0-7]\", dst: nvswitch0, kind: nvlink, count: 18, bandwidth_GBps: 25}\n"
                    "    - {src: \"gpu[0-7]\", dst: \"pcie_switch[0-3]\", kind: pcie, bandwidth_GBps: 31.5}\n"
                    "    - {src: \"nic[0-7]\", dst: \"pcie_switch[0-3]\", kind: pcie, bandwidth_GBps: 31.5}\n"
                    "    - {src: \"pcie_switch[0-3]\", dst: \"cpu[0-1]\", kind: pcie, bandwidth_GBps: 31.5}\n")
    g = load_cluster(gen4, nodes=2)
    assert communicator_rates(g, prof.links, (0, 8)).nic_bw == pytest.approx(24.0)


def test_efficiency_form_predicts_as_the_measured_form(shared_cluster, shared_profile):
    """Writing the efficiency instead of bandwidth + line rate changes nothing beyond rounding."""
    p = shared_profile("dgx-h100")
    eff = p.model_copy(update={"links": {k: LinkParams(latency_us=v.latency_us, efficiency=v.fraction)
                                         for k, v in p.links.items()}})
    c = shared_cluster("dgx-h100", nodes=2)
    for ranks in (8, 16, (0, 8)):
        a = CollectiveModel(c, p).estimate("all_reduce", ranks, GiB)
        b = CollectiveModel(c, eff).estimate("all_reduce", ranks, GiB)
        assert b.time_s == pytest.approx(a.time_s, rel=1e-9) and b.algorithm == a.algorithm, f"{ranks=}"


def test_band_keeps_efficiency_within_line_rate():
    p = Profile(name="p", links={"network": {"latency_us": 14, "efficiency": 0.95, "efficiency_ci": (0.9, 1.05)},
                                 "nvlink": {"latency_us": 3, "bandwidth_GBps": 440, "line_rate_GBps": 450,
                                            "bandwidth_ci_GBps": (430, 460)}})
    hi, lo = profile_at_bound(p, optimistic=True), profile_at_bound(p, optimistic=False)
    assert hi.links["network"].efficiency == 1.0 and lo.links["network"].efficiency == 0.9
    assert hi.links["nvlink"].bandwidth_GBps == 450 and lo.links["nvlink"].bandwidth_GBps == 430
