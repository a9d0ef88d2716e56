"""Importers: real H200 VM samples (tests/data/h200x2), synthetic dumps, bad files."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from clustersim.config.topology import TopologySpec, load_topology_spec
from clustersim.errors import ClusterSimError
from clustersim.topology import load_cluster
from clustersim.topology.importers import detect_format, import_file, import_nccl_xml, import_nvidia_smi, to_yaml

DATA = Path(__file__).resolve().parents[1] / "data" / "h200x2"

HGX_XML = """<system version="1">
  <cpu numaid="0" arch="x86_64" vendor="GenuineIntel">
    <pci busid="0000:05:00.0" class="0x060400" link_speed="32.0 GT/s PCIe" link_width="16">
      <pci busid="0000:07:00.0" class="0x030200" vendor="0x10de" device="0x2330" link_speed="32.0 GT/s PCIe" link_width="16">
        <gpu dev="0" sm="90" rank="0" gdr="1"><nvlink target="0000:a7:00.0" count="18" tclass="0x068000"/></gpu>
      </pci>
      <pci busid="0000:08:00.0" class="0x020700" link_speed="32.0 GT/s PCIe" link_width="16">
        <nic><net name="mlx5_0" dev="0" speed="400000" port="1" latency="0" gdr="1"/></nic>
      </pci>
    </pci>
  </cpu>
  <cpu numaid="1" arch="x86_64" vendor="GenuineIntel">
    <pci busid="0000:85:00.0" class="0x060400" link_speed="32.0 GT/s PCIe" link_width="16">
      <pci busid="0000:87:00.0" class="0x030200" vendor="0x10de" device="0x2330" link_speed="32.0 GT/s PCIe" link_width="16">
        <gpu dev="1" sm="90" rank="1" gdr="1"><nvlink target="0000:a7:00.0" count="18" tclass="0x068000"/></gpu>
      </pci>
      <pci busid="0000:88:00.0" class="0x020700" link_speed="32.0 GT/s PCIe" link_width="16">
        <nic><net name="mlx5_1" dev="1" speed="400000" port="1" latency="0" gdr="1"/></nic>
      </pci>
    </pci>
  </cpu>
</system>
"""

TOPO_M_4GPU = """\tGPU0\tGPU1\tGPU2\tGPU3\tNIC0\tNIC1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID
GPU0\t X \tNV6\tNV6\tNV6\tPIX\tSYS\t0-47\t0\t\tN/A
GPU1\tNV6\t X \tNV6\tNV6\tPIX\tSYS\t0-47\t0\t\tN/A
GPU2\tNV6\tNV6\t X \tNV6\tSYS\tPIX\t48-95\t1\t\tN/A
GPU3\tNV6\tNV6\tNV6\t X \tSYS\tPIX\t48-95\t1\t\tN/A
NIC0\tPIX\tPIX\tSYS\tSYS\t X \tSYS
NIC1\tSYS\tSYS\tPIX\tPIX\tSYS\t X

Legend:

  X    = Self
  NV#  = Connection traversing a bonded set of # NVLinks

NIC Legend:

  NIC0: mlx5_0
  NIC1: mlx5_1
"""


def test_real_h200_vm_nccl_xml():
    data, warns = import_file(DATA / "nccl_topo.xml", name="h200x2")
    spec = TopologySpec.model_validate(data)
    assert spec.gpu_spec.name == "H200-SXM"  # PCI device 0x2335
    assert spec.node.gpus == 2 and spec.node.nvswitches == 4
    # VM gaps are filled and reported
    assert any("link_width" in w and "x16" in w for w in warns)
    assert any("fffffff:ff:ff.0" in w for w in warns)
    assert any("gdr=0" in w for w in warns)
    assert spec.inferred
    assert spec.node.nics == 1 and spec.node.nic_kind == "ethernet" and spec.node.nic_speed_Gbps == 10


def test_real_h200_vm_topo_m_and_xml_agree(tmp_path: Path):
    xml_data, _ = import_file(DATA / "nccl_topo.xml")
    smi_data, warns = import_file(DATA / "nvidia-smi-topo-m.txt", gpu="H200-SXM")
    assert smi_data["node"]["gpus"] == xml_data["node"]["gpus"] == 2
    for data in (xml_data, smi_data):
        p = tmp_path / "x.yaml"
        p.write_text(to_yaml(data))
        c = load_cluster(p)
        assert c.nvlink_bandwidth_per_gpu == pytest.approx(450e9), f"{data=}"  # NV18 = 18 x 25 GB/s
        assert c.path_class(0, 1) == "nvlink" and c.route_bandwidth(0, 1) == pytest.approx(450e9), f"{data=}"
    assert not any("GPU model" in w for w in warns)  # --gpu given


def test_bare_metal_xml_with_switches_and_nics():
    data, warns = import_nccl_xml(HGX_XML, name="hgx")
    spec = TopologySpec.model_validate(data)
    assert spec.gpu_spec.name == "H100-SXM" and spec.node.cpus == 2 and spec.node.pcie_switches == 2
    assert spec.node.nics == 2 and spec.node.nic_speed_Gbps == 400 and spec.node.nic_kind == "infiniband"
    assert not any("link_width" in w for w in warns)
    c = load_cluster_from(data)
    r = [c.link_names[i] for i in c.route(0, 1)]
    assert len(r) == 2  # over NVSwitch


def load_cluster_from(data):
    from clustersim.topology import Cluster

    return Cluster(TopologySpec.model_validate(data))


def test_topo_m_four_gpu_direct_nvlink_and_pcie_groups():
    data, warns = import_nvidia_smi(TOPO_M_4GPU, gpu="H100-SXM", nic_speed_Gbps=400)
    spec = TopologySpec.model_validate(data)
    n = spec.node
    assert n.gpus == 4 and n.nvswitches == 0 and n.nics == 2 and n.cpus == 2 and n.pcie_switches == 2
    nv = [l for l in n.links if l.kind == "nvlink"]
    assert len(nv) == 6 and all(l.count == 6 for l in nv)  # NV6 per pair: 150 GB/s per direction
    c = load_cluster_from(data)
    assert c.route_bandwidth(0, 3) == pytest.approx(150e9)
    assert c.link_names[c.route(0, 3)[0]] == "h0.gpu0->gpu3"


@pytest.mark.parametrize("text", ["", "hello world\n", "<notsystem/>"])
def test_detect_format_rejects_other_text(text):
    with pytest.raises(ClusterSimError):
        detect_format(text)


def test_bad_files(tmp_path: Path):
    for content, match in [(b"", "empty"), (b"\x00\x01\x02garbage", "binary"), (b"\xff\xfe\xfa", "UTF-8"),
                           (b"<system version='1'><cpu>", "not valid XML"), (b"random words", "unknown format"),
                           (b"<system version='1'><cpu/></system>", "no <gpu>")]:
        p = tmp_path / "f.txt"
        p.write_bytes(content)
        with pytest.raises(ClusterSimError, match=match) as ei:
            import_file(p)
        assert ei.value.file == str(p)
    with pytest.raises(ClusterSimError, match="not found"):
        import_file(tmp_path / "missing.xml")


def test_written_yaml_round_trips(tmp_path: Path):
    data, _ = import_file(DATA / "nccl_topo.xml", name="h200x2")
    p = tmp_path / "h200x2.yaml"
    p.write_text(to_yaml(data))
    assert yaml.safe_load(p.read_text())["name"] == "h200x2"
    assert load_topology_spec(p).node.gpus == 2


def test_topo_m_pasted_with_nvidia_smi_reads_the_gpu_name():
    text = (DATA / "nvidia-smi.txt").read_text() + (DATA / "nvidia-smi-topo-m.txt").read_text()
    data, warns = import_nvidia_smi(text)
    assert data["gpu"] == "H200-SXM" and any("nvidia-smi name" in w for w in warns)
    data, warns = import_nvidia_smi((DATA / "nvidia-smi-topo-m.txt").read_text())
    assert data["gpu"] == "H100-SXM" and any("pass --gpu" in w for w in warns)  # guessed, and said so


@pytest.mark.parametrize("name,gpus", [("h100", 1), ("h200x2", 2), ("h200x4", 4)])
def test_topo_m_with_terminal_escape_codes(name, gpus, tmp_path):
    """The project's own profiles/measurements/*/topo-m.txt: nvidia-smi underlined the header
    with ANSI escapes ("\\x1b[4mGPU0 ... \\x1b[0m"), which used to end in 'no row for GPU0'."""
    path = DATA.parents[2] / "profiles" / "measurements" / name / "topo-m.txt"
    assert "\x1b[" in path.read_text()  # the file really carries the escape codes
    data, _ = import_file(path, gpu="H200-SXM" if "h200" in name else "H100-SXM")
    spec = TopologySpec.model_validate(data)
    assert spec.node.gpus == gpus
    if gpus > 1:
        p = tmp_path / "t.yaml"
        p.write_text(to_yaml(data))
        c = load_cluster(p)
        assert c.path_class(0, 1) == "nvlink" and c.route_bandwidth(0, 1) == pytest.approx(450e9)  # NV18
