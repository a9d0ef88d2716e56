"""Topology specs: GPU catalogue, device ranges, validation rules, every shipped file loads."""

from __future__ import annotations

from pathlib import Path

import pytest

from clustersim.config.base import shipped_dir
from clustersim.config.topology import (
    GPU_CATALOG,
    LinkSpec,
    NodeSpec,
    TopologySpec,
    expand_devices,
    gpu_spec,
    load_topology_spec,
)
from clustersim.errors import ClusterSimError
from clustersim.topology import load_cluster

TOPOS = sorted(shipped_dir("topology").glob("*.yaml"))


def shipped_gpus(path: Path) -> int:
    """GPUs of a shipped preset at its own size (read from the spec: nothing is built)."""
    spec = load_topology_spec(path)
    return (spec.cluster.nodes if spec.cluster else 1) * spec.node.gpus


#: presets over this many GPUs take seconds to build (Colossus: 100,000): tests/slow/test_topology_presets_slow.py
#: loads and builds those
LARGE_GPUS = 4096
SMALL_TOPOS = [p for p in TOPOS if shipped_gpus(p) <= LARGE_GPUS]


def _node(**kw):
    base = {"gpus": 2, "cpus": 1, "links": [
        {"src": "gpu0", "dst": "gpu1", "kind": "nvlink", "count": 4, "bandwidth_GBps": 25},
        {"src": "gpu[0-1]", "dst": "cpu0", "kind": "pcie", "bandwidth_GBps": 31.5},
    ]}
    base.update(kw)
    return base


def test_catalogue_has_every_required_gpu_with_vendor_figures():
    need = {"A100-SXM-40GB", "A100-SXM-80GB", "H100-SXM", "H100-PCIe", "H200-SXM", "B200", "GB200"}
    assert need <= set(GPU_CATALOG)
    for g in GPU_CATALOG.values():
        assert g.source, g.name
        assert g.peak_tflops["bf16"] > 0 and g.hbm_GB > 0 and g.hbm_bandwidth_GBps > 0, f"{g=}"
    # Dense figures are half the sparse ones: H100 SXM bf16 1,978.9 sparse (whitepaper; datasheet 1,979) -> 989.4.
    assert gpu_spec("H100-SXM").peak_flops("bf16") == pytest.approx(989.4e12)
    assert gpu_spec("H200-SXM").hbm_GB == 141 and gpu_spec("H200-SXM").hbm_bandwidth_GBps == 4800
    assert gpu_spec("a100-sxm-80gb").hbm_bandwidth_GBps == 2039
    with pytest.raises(ClusterSimError, match="no fp8"):
        gpu_spec("A100-SXM-40GB").peak_flops("fp8")
    with pytest.raises(ClusterSimError, match="unknown GPU"):
        gpu_spec("V100")


def test_device_ranges_and_pairing_modes():
    assert expand_devices("gpu[0-2,5]") == ["gpu0", "gpu1", "gpu2", "gpu5"]
    assert expand_devices("pcie_switch3") == ["pcie_switch3"]
    with pytest.raises(ValueError):
        expand_devices("tpu0")
    ls = LinkSpec(src="gpu[0-7]", dst="pcie_switch[0-3]", kind="pcie", bandwidth_GBps=63)
    assert ls.pairs()[:3] == [("gpu0", "pcie_switch0"), ("gpu1", "pcie_switch0"), ("gpu2", "pcie_switch1")]
    pairs = LinkSpec(src="gpu[0-3]", dst="gpu[0-3]", mode="pairs", kind="nvlink", bandwidth_GBps=25).pairs()
    assert len(pairs) == 6 and ("gpu0", "gpu3") in pairs
    assert len(LinkSpec(src="gpu[0-1]", dst="nvswitch[0-2]", mode="all", kind="nvlink", bandwidth_GBps=25).pairs()) == 6


@pytest.mark.parametrize("bad, match", [
    ({"links": [{"src": "gpu0", "dst": "cpu0", "kind": "pcie", "bandwidth_GBps": 10}]}, "not connected"),
    ({"links": [{"src": "gpu0", "dst": "cpu0", "kind": "nvlink", "bandwidth_GBps": 25},
                {"src": "gpu1", "dst": "cpu0", "kind": "pcie", "bandwidth_GBps": 25},
                {"src": "cpu0", "dst": "pcie_switch0", "kind": "nvlink", "bandwidth_GBps": 25}],
      "pcie_switches": 1}, "nvlink joins"),
    ({"links": [{"src": "gpu[0-1]", "dst": "cpu3", "kind": "pcie", "bandwidth_GBps": 10}]}, "does not exist"),
    ({"links": [{"src": "gpu0", "dst": "gpu0", "kind": "nvlink", "bandwidth_GBps": 10}]}, "itself"),
    ({"nics": 1, "links": _node()["links"] + [{"src": "nic0", "dst": "cpu0", "kind": "pcie", "bandwidth_GBps": 10}]},
     "nic_speed_Gbps"),
    ({"nics": 1, "nic_speed_Gbps": 100, "nic_of_gpu": [0],
      "links": _node()["links"] + [{"src": "nic0", "dst": "cpu0", "kind": "pcie", "bandwidth_GBps": 10}]},
     "one entry per GPU"),
    ({"gpus": 3}, "gpu2 is not connected"),
])
def test_node_rules(bad, match):
    data = _node(**bad)
    NodeSpec.model_validate(_node())  # the base case is valid
    with pytest.raises(Exception, match=match):
        NodeSpec.model_validate(data)


@pytest.mark.parametrize("field, value", [("bandwidth_GBps", 0), ("bandwidth_GBps", -5), ("latency_us", -1),
                                          ("count", 0), ("kind", "warp-drive")])
def test_link_values_rejected(field, value):
    link = {"src": "gpu0", "dst": "gpu1", "kind": "nvlink", "bandwidth_GBps": 25, field: value}
    with pytest.raises(Exception):
        LinkSpec.model_validate(link)


def test_unknown_key_rejected_with_field_path(tmp_path: Path):
    p = tmp_path / "t.yaml"
    p.write_text("name: t\ngpu: H100-SXM\nnode: {gpus: 1, cpus: 1, colour: red, links: "
                 "[{src: gpu0, dst: cpu0, kind: pcie, bandwidth_GBps: 63}]}\n")
    with pytest.raises(ClusterSimError) as ei:
        load_topology_spec(p)
    assert ei.value.field == "node.colour" and "unknown key" in ei.value.reason and ei.value.file == str(p)


def test_zero_bandwidth_names_the_field(tmp_path: Path):
    p = tmp_path / "t.yaml"
    p.write_text("name: t\ngpu: H100-SXM\nnode: {gpus: 1, cpus: 1, links: "
                 "[{src: gpu0, dst: cpu0, kind: pcie, bandwidth_GBps: 0}]}\n")
    with pytest.raises(ClusterSimError) as ei:
        load_topology_spec(p)
    assert ei.value.field == "node.links.0.bandwidth_GBps"


def test_extends_merges_and_overrides(tmp_path: Path):
    p = tmp_path / "mine.yaml"
    p.write_text("extends: dgx-h100\nname: mine\ngpu: H200-SXM\nnode: {nic_speed_Gbps: 200}\n")
    spec = load_topology_spec(p)
    assert spec.name == "mine" and spec.gpu_spec.name == "H200-SXM"
    assert spec.node.nic_speed_Gbps == 200 and spec.node.gpus == 8 and len(spec.node.links) == 8
    p.write_text("extends: mine.yaml\nname: mine\n")
    with pytest.raises(ClusterSimError, match="itself"):
        load_topology_spec(p)
    p.write_text("extends: no-such-preset\nname: mine\n")
    with pytest.raises(ClusterSimError) as ei:
        load_topology_spec(p)
    assert ei.value.field == "extends" and "unknown topology" in ei.value.reason


def test_cluster_with_more_nodes_needs_nics():
    data = {"name": "t", "gpu": "H100-SXM", "node": _node(), "cluster": {"nodes": 2}}
    with pytest.raises(Exception, match="NICs"):
        TopologySpec.model_validate(data)


@pytest.mark.parametrize("path", SMALL_TOPOS, ids=[p.stem for p in SMALL_TOPOS])
def test_every_shipped_topology_loads_and_builds(path: Path):
    spec = load_topology_spec(path)
    assert spec.name == path.stem, "a shipped file's name must equal its bare name"
    assert spec.default_profile
    c = load_cluster(path.stem)
    assert c.n_gpus >= 1 and c.graph.number_of_nodes() > c.n_gpus
    # by path too
    assert load_cluster(str(path)).n_gpus == c.n_gpus


def test_required_presets_shipped():
    names = {p.stem for p in TOPOS}
    assert {"dgx-h100", "hgx-h200", "dgx-a100", "h100-pcie-4gpu", "cannon-4xh100", "cannon-4xa100", "gb200-nvl72",
            "dgx-h100-superpod", "dgx-a100-superpod"} <= names
    for n in ("cannon-4xh100", "cannon-4xa100"):
        assert load_topology_spec(shipped_dir("topology") / f"{n}.yaml").inferred


@pytest.mark.parametrize("links, field, reason", [
    ("[{src: gpu0, dst: cpu0, kind: pcie, bandwidth_GBps: 63}, {src: gpu1, dst: cpu3, kind: pcie, bandwidth_GBps: 63}]",
     "node.links.1", "does not exist"),
    ("[{src: gpu0, dst: cpu0, kind: pcie, bandwidth_GBps: 63}]", "node.links", "gpu1 is not connected"),
    ("[{src: 'gpu[0-1]', dst: cpu0, kind: pcie, bandwidth_GBps: 63}, {src: gpu0, dst: gpux, kind: pcie, bandwidth_GBps: 1}]",
     "node.links.1.dst", "bad device name"),
])
def test_node_errors_name_the_exact_field(tmp_path: Path, links, field, reason):
    p = tmp_path / "t.yaml"
    p.write_text(f"name: t\ngpu: H100-SXM\nnode: {{gpus: 2, cpus: 1, links: {links}}}\n")
    with pytest.raises(ClusterSimError) as ei:
        load_topology_spec(p)
    assert ei.value.field == field and reason in ei.value.reason and ei.value.file == str(p)
