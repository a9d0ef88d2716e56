"""The catalogue of shipped topology presets: one summary per preset (``clustersim topo list``).

Each summary is read from the preset's file and its compiled node (one node, whatever the
file's ``cluster.nodes``): nothing here is a second copy of a hardware figure.

Examples
--------
>>> by_name = {p.name: p for p in list_presets()}
>>> h = by_name["dgx-h100"]
>>> h.gpus_per_node, h.gpu_model, h.intra_node, h.intra_node_bandwidth_per_gpu_Bps / 1e9
(8, 'H100-SXM', 'NVSwitch', 450.0)
>>> h.nic_bandwidth_per_gpu_Bps * 8 / 1e9  # Gb/s: one 400 Gb/s ConnectX-7 per GPU
400.0
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from clustersim.config.base import resolve_file, shipped_dir, shipped_names
from clustersim.topology.cluster import load_cluster
from clustersim.topology.graphs import NodeTemplate

#: Intra-node fabric classes, from most to least connected.
INTRA_NODE_KINDS = ("NVSwitch", "NVLink mesh", "NVLink+PCIe", "PCIe", "none")


@dataclass(frozen=True)
class PresetSummary:
    """One shipped topology preset, as ``clustersim topo list`` shows it.

    Attributes
    ----------
    name : str
        Bare name (what ``--topology`` and ``cluster.topology`` take).
    description : str
        The file's ``description``.
    gpus_per_node : int
        GPUs in one node (host) of the preset.
    gpu_model : str
        GPU catalogue name (``H100-SXM``, ...).
    intra_node : str
        How GPUs of one node reach each other, one of :data:`INTRA_NODE_KINDS`
        (see :func:`intra_node_fabric`).
    intra_node_bandwidth_per_gpu_Bps : float
        Bytes/s per direction out of one GPU over that fabric: its NVLinks where it has any
        (as ``topo show``'s "NVLink per GPU"), else its PCIe links.
    nics_per_node : int
        Compute NICs per node.
    nic_speed_Gbps : float or None
        Line rate of one NIC, Gb/s.
    nic_bandwidth_per_gpu_Bps : float
        NIC line rate available to each GPU, bytes/s (NIC rate / GPUs sharing the NIC).
    nodes : int
        The file's default node count (``cluster.nodes``; 1 without a cluster section).
    default_profile : str or None
        Calibration profile the preset names.
    """

    name: str
    description: str
    gpus_per_node: int
    gpu_model: str
    intra_node: str
    intra_node_bandwidth_per_gpu_Bps: float
    nics_per_node: int
    nic_speed_Gbps: float | None
    nic_bandwidth_per_gpu_Bps: float
    nodes: int
    default_profile: str | None

    def to_dict(self) -> dict:
        """JSON-able dict of the fields (the ``topo list --json`` item)."""
        return asdict(self)


def intra_node_fabric(template: NodeTemplate) -> str:
    """Classify how the GPUs of a compiled node reach each other.

    ``NVSwitch``: GPUs have NVLinks into NVSwitch chips; ``NVLink mesh``: a direct NVLink
    between every GPU pair; ``NVLink+PCIe``: direct NVLinks between some pairs (bridges),
    PCIe for the rest; ``PCIe``: no NVLink; ``none``: a single GPU.

    >>> from clustersim.topology import load_cluster
    >>> [intra_node_fabric(load_cluster(n).template) for n in ("hgx-h200", "cannon-4xh100", "h100-pcie-4gpu")]
    ['NVSwitch', 'NVLink mesh', 'NVLink+PCIe']
    """
    gpus = [d for d in template.devices if template.kinds[d] == "gpu"]
    n = len(gpus)
    nvlink = {(s, d) for s, d, a in template.edges if a["kind"] == "nvlink" and template.kinds[s] == "gpu"}
    if any(template.kinds[d] == "nvswitch" for _, d in nvlink):
        return "NVSwitch"
    if n < 2:
        return "none"
    direct = {(s, d) for s, d in nvlink if template.kinds[d] == "gpu"}
    if len(direct) == n * (n - 1):
        return "NVLink mesh"
    return "NVLink+PCIe" if direct else "PCIe"


def preset_summary(name: str | Path) -> PresetSummary:
    """Summary of one shipped preset (or topology file) by name or path.

    >>> p = preset_summary("cannon-4xa100")
    >>> p.gpus_per_node, p.intra_node, p.nics_per_node, p.nic_bandwidth_per_gpu_Bps * 8 / 1e9
    (4, 'NVLink mesh', 1, 25.0)
    """
    c = load_cluster(resolve_file(name, "topology"), nodes=1)
    node = c.spec.node
    kind = intra_node_fabric(c.template)
    out_of_gpu0 = [d for _, _, d in c.graph.out_edges(c.gpus[0], data=True)]
    nvlink_bw = sum(d["bandwidth"] for d in out_of_gpu0 if d["kind"] == "nvlink")
    pcie_bw = sum(d["bandwidth"] for d in out_of_gpu0 if d["kind"] == "pcie")
    return PresetSummary(
        name=c.name,
        description=c.spec.description or "",
        gpus_per_node=c.gpus_per_host,
        gpu_model=c.gpu_spec.name,
        intra_node=kind,
        intra_node_bandwidth_per_gpu_Bps=float(nvlink_bw if nvlink_bw > 0 else pcie_bw),
        nics_per_node=node.nics,
        nic_speed_Gbps=node.nic_speed_Gbps if node.nics else None,
        nic_bandwidth_per_gpu_Bps=float(c.nic_bandwidth_per_gpu),
        nodes=c.spec.cluster.nodes if c.spec.cluster is not None else 1,
        default_profile=c.default_profile,
    )


def list_presets() -> list[PresetSummary]:
    """Summaries of every shipped topology preset, sorted by name.

    >>> names = [p.name for p in list_presets()]
    >>> names == sorted(names) and {"dgx-h100", "hgx-h200", "gb200-nvl72"} <= set(names)
    True
    """
    folder = shipped_dir("topology")
    return [preset_summary(folder / f"{n}.yaml") for n in shipped_names("topology")]
