"""Import real machines: ``nvidia-smi topo -m`` output and NCCL topology XML into a topology spec.

Both importers return ``(data, warnings)``: ``data`` is a dict that validates as
:class:`~clustersim.config.topology.TopologySpec` (write it with
:func:`to_yaml`), ``warnings`` lists every default that filled a gap.

Facts used (see NCCL ``src/graph/xml.cc``, ``topo.cc``):

* NCCL XML: ``system > cpu > pci (nested bridges) > gpu > nvlink`` and ``nic > net``;
  ``nvlink`` ``tclass 0x068000`` is an NVSwitch, ``0x030200`` a GPU, ``0x068001`` a CPU.
  Inside virtual machines NVSwitches are hidden behind the placeholder target
  ``fffffff:ff:ff.0`` and PCIe widths read ``link_width="0"``.
* ``net speed`` is Mb/s (400000 = NDR 400 Gb/s).
* ``nvidia-smi topo -m``: ``NV#`` = a bonded set of # NVLinks; on NVSwitch systems
  the number is the GPU's link count into the switches (NV18 on H100/H200, NV12
  on A100), not a dedicated pair link.

Examples
--------
>>> data, warns = import_nvidia_smi("GPU0\\tGPU1\\nGPU0\\t X \\tNV4\\nGPU1\\tNV4\\t X \\n", gpu="A100-SXM-80GB")
>>> data["node"]["gpus"], data["node"]["links"][0]["count"]
(2, 4)
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import yaml

from clustersim.budget import MAX_YAML_BYTES
from clustersim.config.base import validate
from clustersim.config.topology import GPU_CATALOG, TopologySpec
from clustersim.errors import ClusterSimError, require_file

PLACEHOLDER_TARGET = "fffffff:ff:ff.0"
NVSWITCH_CLASS = "0x068000"
CPU_CLASS = "0x068001"
# Per-link, per-direction NVLink rate by generation/sm: NVLink3 (sm80) and NVLink4 (sm90) 25 GB/s,
# NVLink5 (sm100) 50 GB/s (NVIDIA A100/H100/B200 datasheets: 50 / 50 / 100 GB/s bidirectional per link).
NVLINK_GBPS_BY_SM = {80: 25.0, 90: 25.0, 100: 50.0}
# NVSwitch chips and links per chip of the HGX baseboards: 18 links on Hopper -> 4 chips 5+5+4+4
# (real HGX H200 dump, NVIDIA/nccl-tests#256); 12 on Ampere -> 6 chips x 2 (DGX A100 guide).
# HGX B200: 2 NVLink switch chips, 9 links from each GPU to each (NVIDIA HGX B200 datasheet: "2x NVLink switches").
HGX_NVSWITCH_SPLIT = {(90, 18): [5, 5, 4, 4], (80, 12): [2, 2, 2, 2, 2, 2], (100, 18): [9, 9]}
# PCI device ids (vendor 0x10de) -> catalogue names.
PCI_DEVICE_GPU = {
    "0x20b0": "A100-SXM-40GB", "0x20b2": "A100-SXM-80GB", "0x20b5": "A100-SXM-80GB",
    "0x2330": "H100-SXM", "0x2331": "H100-PCIe", "0x2335": "H200-SXM", "0x2901": "B200", "0x2941": "GB200",
}
SM_DEFAULT_GPU = {80: "A100-SXM-80GB", 90: "H100-SXM", 100: "B200"}
# GPU names as `nvidia-smi` prints them (when its output is pasted with `topo -m`), most specific first.
NAME_PATTERNS = [(r"GB200", "GB200"), (r"B200", "B200"), (r"H200", "H200-SXM"), (r"H100\s+PCIe", "H100-PCIe"),
                 (r"H100", "H100-SXM"), (r"A100[- ]SXM4?[- ]40GB", "A100-SXM-40GB"), (r"A100", "A100-SXM-80GB")]
# GT/s per lane -> per-direction GB/s of x1 after line coding (Gen3+ 128b/130b).
PCIE_LANE_GBPS = {2.5: 0.25, 5.0: 0.5, 8.0: 0.985, 16.0: 1.969, 32.0: 3.938, 64.0: 7.877}


def _pcie_GBps(speed: str | None, width: str | None, where: str, warns: list[str]) -> float:
    m = re.match(r"\s*([0-9.]+)", speed or "")
    gts = float(m.group(1)) if m else 0.0
    if gts not in PCIE_LANE_GBPS:
        warns.append(f"{where}: PCIe link_speed {speed!r} unknown; assumed 32.0 GT/s (Gen5)")
        gts = 32.0
    try:
        w = int(width or 0)
    except ValueError:
        w = 0
    if w <= 0:
        warns.append(f"{where}: PCIe link_width={width!r} (typical inside VMs); assumed x16")
        w = 16
    return round(PCIE_LANE_GBPS[gts] * w, 2)


def _finish(data: dict[str, Any], source: str) -> dict[str, Any]:
    """Validate the produced spec (a bug here is ours, but say so clearly)."""
    validate(TopologySpec, data, file=source)
    return data


def _nvswitch_links(gpu_names: list[str], count: int, sm: int, where: str, warns: list[str],
                    latency_us: float = 0.25) -> tuple[int, list[dict]]:
    split = HGX_NVSWITCH_SPLIT.get((sm, count))
    per = NVLINK_GBPS_BY_SM.get(sm, 25.0)
    if split is None:
        split = [count]
        warns.append(f"{where}: NVSwitch chips not visible; modelled as one switch with {count} links per GPU")
    else:
        warns.append(f"{where}: NVSwitch chips not visible; assumed the HGX baseboard layout "
                     f"({len(split)} chips, {'+'.join(map(str, split))} links per GPU)")
    rng = f"gpu[{','.join(g[3:] for g in gpu_names)}]"
    links = [{"src": rng, "dst": f"nvswitch{i}", "kind": "nvlink", "count": c, "bandwidth_GBps": per,
              "latency_us": latency_us} for i, c in enumerate(split)]
    return len(split), links


# ---------------------------------------------------------------------------------------------
# NCCL topology XML
# ---------------------------------------------------------------------------------------------


def import_nccl_xml(text: str, name: str = "imported", gpu: str | None = None,
                    source: str = "<nccl xml>") -> tuple[dict[str, Any], list[str]]:
    """Convert an ``NCCL_TOPO_DUMP_FILE`` XML document into a topology spec dict.

    Parameters
    ----------
    text:
        The XML text.
    name:
        Topology name to write.
    gpu:
        GPU catalogue name; default: from the PCI device id, else from ``sm``.
    source:
        File name used in messages.
    """
    warns: list[str] = []
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise ClusterSimError(f"not valid XML: {exc}", file=source) from None
    if root.tag != "system":
        raise ClusterSimError(f"root element is <{root.tag}>, expected <system> (NCCL_TOPO_DUMP_FILE)", file=source)
    cpus = root.findall("cpu")
    if not cpus:
        raise ClusterSimError("no <cpu> element", file=source)
    gpus: list[dict] = []  # {busid, dev, sm, cpu, parent (switch name or cpu), pcie_GBps, nvlinks, device}
    nics: list[dict] = []
    switches: list[str] = []
    links: list[dict] = []
    busid_to_gpu: dict[str, int] = {}

    def walk(el: ET.Element, parent: str, cpu_name: str) -> None:
        for child in el:
            if child.tag == "pci":
                busid = child.get("busid", "?")
                cls = (child.get("class") or "").lower()
                bw = _pcie_GBps(child.get("link_speed"), child.get("link_width"), f"pci {busid}", warns)
                g = child.find("gpu")
                if g is not None:
                    gpus.append({"busid": busid.lower(), "dev": int(g.get("dev", len(gpus))),
                                 "sm": int(g.get("sm", "0") or 0), "parent": parent, "bw": bw,
                                 "nvlinks": g.findall("nvlink"), "device": (child.get("device") or "").lower()})
                    continue
                n = child.find("nic")
                if n is not None and not cls.startswith("0x0604"):
                    for net in n.findall("net"):
                        nics.append({"net": net, "parent": parent, "bw": bw})
                    continue
                if cls.startswith("0x0604") or cls.startswith("0x06"):
                    sw = f"pcie_switch{len(switches)}"
                    switches.append(sw)
                    links.append({"src": sw, "dst": parent, "kind": "pcie", "bandwidth_GBps": bw, "latency_us": 0.25})
                    walk(child, sw, cpu_name)
                    if n is not None:
                        for net in n.findall("net"):
                            nics.append({"net": net, "parent": sw, "bw": bw})
                else:
                    walk(child, parent, cpu_name)
            elif child.tag == "nic":
                # A <nic> directly under <cpu> (e.g. a VM's virtio NIC): attach it to the CPU.
                for net in child.findall("net"):
                    nics.append({"net": net, "parent": parent, "bw": None})

    for ci, c in enumerate(cpus):
        walk(c, f"cpu{ci}", f"cpu{ci}")
    if not gpus:
        raise ClusterSimError("no <gpu> element (was the dump taken on a GPU node?)", file=source)
    gpus.sort(key=lambda g: g["dev"])
    for i, g in enumerate(gpus):
        busid_to_gpu[g["busid"]] = i
    sms = {g["sm"] for g in gpus}
    sm = max(sms)
    if gpu is None:
        dev = gpus[0]["device"]
        gpu = PCI_DEVICE_GPU.get(dev) or SM_DEFAULT_GPU.get(sm)
        if gpu is None:
            raise ClusterSimError(f"cannot tell the GPU model (sm {sm}, device {dev}); pass --gpu", file=source)
        if dev not in PCI_DEVICE_GPU:
            warns.append(f"GPU model guessed from sm={sm}: {gpu} (pass --gpu to choose)")
    names = [f"gpu{i}" for i in range(len(gpus))]
    for i, g in enumerate(gpus):
        links.append({"src": names[i], "dst": g["parent"], "kind": "pcie", "bandwidth_GBps": g["bw"], "latency_us": 0.25})
    # NVLinks: to NVSwitch (class 0x068000 or the VM placeholder), to a peer GPU, or to a CPU.
    nvs_count: dict[int, int] = {}
    seen_pairs: set[tuple[int, int]] = set()
    per = NVLINK_GBPS_BY_SM.get(sm, 25.0)
    for i, g in enumerate(gpus):
        for nv in g["nvlinks"]:
            target = (nv.get("target") or "").lower()
            tclass = (nv.get("tclass") or "").lower()
            count = int(nv.get("count", "1") or 1)
            if tclass == NVSWITCH_CLASS or target == PLACEHOLDER_TARGET:
                if target == PLACEHOLDER_TARGET:
                    warns.append(f"gpu{i}: NVLink target is the VM placeholder {PLACEHOLDER_TARGET}; "
                                 "assumed NVSwitch (as NCCL does)")
                nvs_count[i] = nvs_count.get(i, 0) + count
            elif target in busid_to_gpu:
                j = busid_to_gpu[target]
                pair = (min(i, j), max(i, j))
                if pair not in seen_pairs and i != j:
                    seen_pairs.add(pair)
                    links.append({"src": f"gpu{pair[0]}", "dst": f"gpu{pair[1]}", "kind": "nvlink", "count": count,
                                  "bandwidth_GBps": per, "latency_us": 0.25})
            elif tclass == CPU_CLASS:
                warns.append(f"gpu{i}: NVLink to a CPU ignored (modelled as PCIe)")
            else:
                warns.append(f"gpu{i}: NVLink target {target!r} not found; ignored")
    n_nvswitches = 0
    if nvs_count:
        counts = sorted(set(nvs_count.values()))
        if len(counts) > 1:
            warns.append(f"GPUs report different NVSwitch link counts {counts}; using {counts[0]}")
        on = [names[i] for i in sorted(nvs_count)]
        n_nvswitches, nvl = _nvswitch_links(on, counts[0], sm, "nvlink", warns)
        links.extend(nvl)
    nic_kind = "infiniband"
    speeds = []
    for k, n in enumerate(nics):
        net = n["net"]
        nm = net.get("name", f"net{k}")
        try:
            speed = float(net.get("speed", "0")) / 1000.0  # Mb/s -> Gb/s
        except ValueError:
            speed = 0.0
        if speed <= 0:
            warns.append(f"NIC {nm}: no speed; assumed 400 Gb/s")
            speed = 400.0
        speeds.append(speed)
        if nm.startswith(("eth", "en")):  # kernel Ethernet names; IB HCAs are mlx5_N
            nic_kind = "ethernet"
        bw = n["bw"]
        if bw is None:
            bw = 63.0 if sm >= 90 else 31.5
            warns.append(f"NIC {nm}: no PCIe link listed; assumed x16 at the GPUs' PCIe generation ({bw} GB/s)")
        if net.get("gdr") == "0":
            warns.append(f"NIC {nm}: gdr=0 (no GPUDirect RDMA); scenarios should set gpudirect_rdma: false")
        links.append({"src": f"nic{k}", "dst": n["parent"], "kind": "pcie", "bandwidth_GBps": bw, "latency_us": 0.25})
    if speeds and len(set(speeds)) > 1:
        warns.append(f"NICs have different speeds {sorted(set(speeds))}; using the lowest")
    if len(cpus) > 1:
        links.append({"src": f"cpu[0-{len(cpus) - 1}]", "dst": f"cpu[0-{len(cpus) - 1}]", "mode": "pairs",
                      "kind": "cpu-interconnect", "bandwidth_GBps": 32.0, "latency_us": 0.1})
        warns.append("CPU-to-CPU interconnect bandwidth not in the dump; assumed 32 GB/s per direction")
    node: dict[str, Any] = {"gpus": len(gpus), "nvswitches": n_nvswitches, "pcie_switches": len(switches),
                            "cpus": len(cpus), "nics": len(nics)}
    if nics:
        node["nic_speed_Gbps"] = min(speeds)
        node["nic_kind"] = nic_kind
    node["links"] = links
    data = {"name": name, "description": f"imported from NCCL topology XML {Path(source).name}", "gpu": gpu,
            "default_profile": None, "node": node, "sources": [f"NCCL_TOPO_DUMP_FILE {Path(source).name}"],
            "inferred": sorted(set(warns)), "notes": "Generated by clustersim topo import; check the inferred list."}
    return _finish(data, source), warns


# ---------------------------------------------------------------------------------------------
# nvidia-smi topo -m
# ---------------------------------------------------------------------------------------------

_NV = re.compile(r"^NV(\d+)$")


def import_nvidia_smi(text: str, name: str = "imported", gpu: str | None = None, nic_speed_Gbps: float | None = None,
                      source: str = "<nvidia-smi topo -m>") -> tuple[dict[str, Any], list[str]]:
    """Convert ``nvidia-smi topo -m`` output into a topology spec dict.

    PCIe structure is rebuilt from the relation codes: devices related by PIX/PXB
    share a PCIe switch, devices on one NUMA node share a CPU, NODE/SYS cross the
    host bridge / the CPU interconnect.
    """
    warns: list[str] = []
    text = strip_ansi(text)  # nvidia-smi underlines the header on a terminal: "\x1b[4mGPU0 ... \x1b[0m"
    lines = [ln.rstrip("\n") for ln in text.splitlines()]
    header_i = next((i for i, ln in enumerate(lines) if re.match(r"^\s*GPU0\b", ln)), None)
    if header_i is None:
        raise ClusterSimError("no header row starting with GPU0 (is this `nvidia-smi topo -m` output?)", file=source)
    header = lines[header_i].split("\t") if "\t" in lines[header_i] else lines[header_i].split()
    header = [h.strip() for h in header if h.strip()]
    devs = [h for h in header if re.match(r"^(GPU|NIC)\d+$", h)]
    n_dev = len(devs)
    numa_col = header.index("NUMA Affinity") if "NUMA Affinity" in header else None
    rows: dict[str, list[str]] = {}
    numa: dict[str, str] = {}
    nic_names: dict[str, str] = {}
    for ln in lines[header_i + 1:]:
        m = re.match(r"^\s*((?:GPU|NIC)\d+)\s+(.*)$", ln)
        if m and m.group(1) in devs and m.group(1) not in rows:
            cells = [c.strip() for c in (ln.split("\t") if "\t" in ln else ln.split())]
            cells = [c for c in cells if c != ""]
            vals = cells[1:1 + n_dev]
            if len(vals) < n_dev:
                raise ClusterSimError(f"row {m.group(1)} has {len(vals)} cells, expected {n_dev}", file=source)
            rows[m.group(1)] = vals
            if numa_col is not None:
                rest = cells[1 + n_dev:]
                # columns after the matrix: CPU Affinity, NUMA Affinity, GPU NUMA ID
                numa[m.group(1)] = rest[numa_col - n_dev] if len(rest) > numa_col - n_dev else "N/A"
        mm = re.match(r"^\s*(NIC\d+):\s*(\S+)", ln)
        if mm:
            nic_names[mm.group(1)] = mm.group(2)
    gpus_h = [d for d in devs if d.startswith("GPU")]
    nics_h = [d for d in devs if d.startswith("NIC")]
    if not gpus_h:
        raise ClusterSimError("no GPU columns", file=source)
    missing = [d for d in devs if d not in rows]
    if missing:
        raise ClusterSimError(f"no row for {missing[0]}", file=source)

    def rel(a: str, b: str) -> str:
        return rows[a][devs.index(b)].upper()

    nv: dict[tuple[int, int], int] = {}
    for i, a in enumerate(gpus_h):
        for j, b in enumerate(gpus_h):
            if i < j:
                m = _NV.match(rel(a, b))
                if m:
                    nv[(i, j)] = int(m.group(1))
    counts = sorted(set(nv.values()))
    all_pairs = len(nv) == len(gpus_h) * (len(gpus_h) - 1) // 2 and len(gpus_h) > 1
    if gpu is None:
        for pat, model in NAME_PATTERNS:
            if re.search(r"NVIDIA\s+" + pat, text):
                gpu = model
                warns.append(f"GPU model {model} taken from the nvidia-smi name in the file")
                break
    if gpu is None:
        # `nvidia-smi topo -m` never prints the GPU name; the NVLink count narrows it down only so far
        if counts and counts[-1] >= 18:
            gpu, alike = "H100-SXM", "H100-SXM or H200-SXM (both NV18; HBM 80 vs 141 GB, 3.35 vs 4.8 TB/s)"
        elif counts and counts[-1] == 12:
            gpu, alike = "A100-SXM-80GB", "A100-SXM-80GB or A100-SXM-40GB (both NV12)"
        else:
            gpu, alike = "H100-SXM", "any GPU (no NVLink count to go by)"
        warns.append(f"GPU model ASSUMED {gpu}: topo -m output has no GPU name and its NVLink counts fit {alike}; "
                     f"pass --gpu (e.g. --gpu H200-SXM), or append `nvidia-smi` output (with the names) to the file")
    if gpu not in GPU_CATALOG:
        raise ClusterSimError(f"unknown GPU model {gpu!r} (known: {', '.join(GPU_CATALOG)})", field="gpu")
    sm = GPU_CATALOG[gpu].sm
    per = NVLINK_GBPS_BY_SM.get(sm, 25.0)
    links: list[dict] = []
    n_nvswitches = 0
    # NV18 (Hopper) / NV12 (Ampere) between every pair is the GPU's whole link count into NVSwitch.
    full = {90: 18, 80: 12, 100: 18}.get(sm)
    if all_pairs and len(counts) == 1 and full is not None and counts[0] == full:
        n_nvswitches, nvl = _nvswitch_links([f"gpu{i}" for i in range(len(gpus_h))], counts[0], sm, "topo -m", warns)
        links.extend(nvl)
    else:
        for (i, j), c in sorted(nv.items()):
            links.append({"src": f"gpu{i}", "dst": f"gpu{j}", "kind": "nvlink", "count": c, "bandwidth_GBps": per,
                          "latency_us": 0.25})
    # PCIe: union devices joined by PIX/PXB into one switch; CPUs from NUMA affinity.
    parent = {d: d for d in devs}

    def find(x: str) -> str:
        while parent[x] != x:
            x = parent[x]
        return x

    for a in devs:
        for b in devs:
            if a != b and rel(a, b) in ("PIX", "PXB"):
                parent[find(a)] = find(b)
    # NIC rows carry no NUMA column: a device without one takes the NUMA node of the closest GPU.
    order = ("PIX", "PXB", "PHB", "NODE")
    for d in devs:
        if numa.get(d, "N/A") in ("N/A", ""):
            near = [g for code in order for g in gpus_h if g != d and rel(d, g) == code
                    and numa.get(g, "N/A") not in ("N/A", "")]
            if near:
                numa[d] = numa[near[0]]
    numa_ids: list[str] = []
    for d in devs:
        v = numa.get(d, "N/A")
        if v not in numa_ids:
            numa_ids.append(v)
    if "N/A" in numa_ids or "" in numa_ids:
        warns.append("NUMA affinity missing for some devices; they share a CPU")
    cpu_of = {d: f"cpu{numa_ids.index(numa.get(d, 'N/A'))}" for d in devs}
    groups: dict[str, list[str]] = {}
    for d in devs:
        groups.setdefault(find(d), []).append(d)
    n_sw = 0
    pcie_gen = 63.0 if sm >= 90 else 31.5
    warns.append(f"PCIe widths and speeds not in topo -m; assumed x16 at {pcie_gen} GB/s per direction")
    local = {d: (f"gpu{gpus_h.index(d)}" if d.startswith("GPU") else f"nic{nics_h.index(d)}") for d in devs}
    for members in groups.values():
        if len(members) == 1:
            d = members[0]
            links.append({"src": local[d], "dst": cpu_of[d], "kind": "pcie", "bandwidth_GBps": pcie_gen, "latency_us": 0.25})
            continue
        sw = f"pcie_switch{n_sw}"
        n_sw += 1
        for d in members:
            links.append({"src": local[d], "dst": sw, "kind": "pcie", "bandwidth_GBps": pcie_gen, "latency_us": 0.25})
        links.append({"src": sw, "dst": cpu_of[members[0]], "kind": "pcie", "bandwidth_GBps": pcie_gen, "latency_us": 0.25})
    n_cpus = len(numa_ids)
    if n_cpus > 1:
        links.append({"src": f"cpu[0-{n_cpus - 1}]", "dst": f"cpu[0-{n_cpus - 1}]", "mode": "pairs",
                      "kind": "cpu-interconnect", "bandwidth_GBps": 32.0, "latency_us": 0.1})
        warns.append("CPU-to-CPU interconnect bandwidth not in topo -m; assumed 32 GB/s per direction")
    node: dict[str, Any] = {"gpus": len(gpus_h), "nvswitches": n_nvswitches, "pcie_switches": n_sw, "cpus": n_cpus,
                            "nics": len(nics_h)}
    if nics_h:
        if nic_speed_Gbps is None:
            nic_speed_Gbps = 400.0
            warns.append("NIC speed not in topo -m; assumed 400 Gb/s (pass --nic-gbps)")
        node["nic_speed_Gbps"] = nic_speed_Gbps
        node["nic_kind"] = "infiniband"
    node["links"] = links
    data = {"name": name, "description": f"imported from nvidia-smi topo -m {Path(source).name}", "gpu": gpu,
            "default_profile": None, "node": node, "sources": [f"nvidia-smi topo -m {Path(source).name}"],
            "inferred": sorted(set(warns)), "notes": "Generated by clustersim topo import; check the inferred list."}
    return _finish(data, source), warns


# ---------------------------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------------------------


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def strip_ansi(text: str) -> str:
    """Text without terminal escape sequences (colour, underline).

    >>> strip_ansi("\\t\\x1b[4mGPU0\\tGPU1\\x1b[0m")
    '\\tGPU0\\tGPU1'
    """
    return _ANSI.sub("", text)


def detect_format(text: str) -> str:
    """``"nccl-xml"``, ``"nvidia-smi"`` or raise ClusterSimError.

    >>> detect_format('<system version="1"><cpu numaid="0"/></system>')
    'nccl-xml'
    >>> detect_format("        GPU0    GPU1\\nGPU0     X      NV18\\nGPU1    NV18     X\\n")
    'nvidia-smi'
    """
    text = strip_ansi(text)
    head = text.lstrip()[:2000]
    if head.startswith("<") and "<system" in head:
        return "nccl-xml"
    if re.search(r"^\s*GPU0\b", text, re.M) and ("X" in text):
        return "nvidia-smi"
    raise ClusterSimError("unknown format: expected NCCL topology XML (<system ...>) or `nvidia-smi topo -m` output")


def import_file(path: str | Path, name: str | None = None, gpu: str | None = None,
                nic_speed_Gbps: float | None = None) -> tuple[dict[str, Any], list[str]]:
    """Read a topology dump of either format (detected from its content)."""
    p = require_file(path)
    if p.stat().st_size > MAX_YAML_BYTES:  # an 8-GPU NCCL topology dump is ~20 KB
        raise ClusterSimError(f"file of {p.stat().st_size:,} bytes exceeds the {MAX_YAML_BYTES:,}-byte limit of "
                              "topology dumps", file=str(path))
    raw = p.read_bytes()
    if b"\x00" in raw:
        raise ClusterSimError("binary file (not a topology dump)", file=str(path))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ClusterSimError("not UTF-8 text", file=str(path)) from None
    if not text.strip():
        raise ClusterSimError("file is empty", file=str(path))
    try:
        fmt = detect_format(text)
    except ClusterSimError as exc:
        raise exc.with_file(str(path)) from None
    nm = name or re.sub(r"[^A-Za-z0-9_.-]+", "-", p.stem)
    if fmt == "nccl-xml":
        return import_nccl_xml(text, name=nm, gpu=gpu, source=str(path))
    return import_nvidia_smi(text, name=nm, gpu=gpu, nic_speed_Gbps=nic_speed_Gbps, source=str(path))


def to_yaml(data: dict[str, Any]) -> str:
    """Topology YAML text of an imported spec dict."""
    return yaml.safe_dump(data, sort_keys=False, width=120)
