"""Topology files: GPU catalogue, node description, cluster fabric (pydantic models only).

A topology file describes one *node preset* (the GPUs, NVSwitch chips, PCIe
switches, CPUs and NICs of one server or one NVLink domain, and the links
between them) and, optionally, a ``cluster:`` section that replicates the node
``nodes`` times with its NICs on a fat-tree fabric. The graph itself is built by
:mod:`clustersim.topology`.

Units are in the field names: ``bandwidth_GBps`` is GB/s (1e9 bytes/s) **per
direction** and per physical link (an entry with ``count: 5`` is five such
links), ``latency_us`` is microseconds, NIC and fabric line rates are in
``Gbps`` (1e9 bit/s, as vendors quote them; 400 Gbps = 50 GB/s per direction).

Device names are ``gpu<i>``, ``nvswitch<i>``, ``pcie_switch<i>``, ``cpu<i>`` and
``nic<i>``; a link end may name a range, ``gpu[0-7]`` or ``nic[0,2,4-5]``.

Example
-------
>>> spec = TopologySpec.model_validate({
...     "name": "two-gpus", "gpu": "H100-SXM",
...     "node": {"gpus": 2, "cpus": 1,
...              "links": [{"src": "gpu0", "dst": "gpu1", "kind": "nvlink", "count": 6, "bandwidth_GBps": 25},
...                        {"src": "gpu[0-1]", "dst": "cpu0", "kind": "pcie", "bandwidth_GBps": 63}]}})
>>> spec.gpu_spec.name, len(spec.node.expanded_links())
('H100-SXM', 3)
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from clustersim.budget import BOUNDS
from clustersim.config.base import NonNeg, Pos, StrictModel, bounded, load_yaml, resolve_file, validate
from clustersim.errors import ClusterSimError
from clustersim.config.provenance import Provenance

Devices = bounded("node devices", minimum=0)
#: Most devices one range (``gpu[0-4095]``) may name, and most links one node may expand to.
MAX_NODE_DEVICES = BOUNDS["node devices"][0]
MAX_NODE_LINKS = BOUNDS["node links"][0]

LinkKind = Literal["nvlink", "pcie", "infiniband", "ethernet", "cpu-interconnect"]
NODE_KINDS = ("gpu", "nvswitch", "pcie_switch", "cpu", "nic", "switch")
LINK_KINDS = ("nvlink", "pcie", "infiniband", "ethernet", "cpu-interconnect")
# device prefix in a topology file -> (count field of NodeSpec, graph node kind)
DEVICE_PREFIXES = {
    "gpu": ("gpus", "gpu"),
    "nvswitch": ("nvswitches", "nvswitch"),
    "pcie_switch": ("pcie_switches", "pcie_switch"),
    "cpu": ("cpus", "cpu"),
    "nic": ("nics", "nic"),
}


# ---------------------------------------------------------------------------------------------
# GPU catalogue
# ---------------------------------------------------------------------------------------------


class GPUSpec(StrictModel):
    """Vendor figures of one GPU model (dense, i.e. without 2:4 sparsity).

    ``peak_tflops`` holds only the data types the GPU runs on tensor cores or
    CUDA cores; a missing key means "not supported" (A100 has no fp8), see
    :meth:`peak_flops`.
    """

    name: str = Field(description="Catalogue name, e.g. 'H100-SXM'.")
    vendor_name: str | None = Field(None, description="Name as nvidia-smi prints it, e.g. 'NVIDIA H100 80GB HBM3'.")
    sm: int = Field(ge=10, le=10_000, description="Compute capability x10 (80 Ampere, 90 Hopper, 100 Blackwell); picks NCCL constants.")
    peak_tflops: dict[Literal["bf16", "fp16", "fp8", "tf32", "fp32"], Pos] = Field(
        description="Dense peak TFLOP/s per data type (fp32 = non-tensor FP32)."
    )
    hbm_GB: Pos = Field(description="HBM capacity as the datasheet quotes it. Memory capacities are binary "
                        "(JEDEC): an H100's 80 GB are five 16 GiB HBM3 stacks, so the bytes are hbm_GB x 2^30.")
    visible_memory_MiB: float | None = Field(None, gt=0, le=1e9, description="Device memory CUDA reports on a "
                                             "measured part (cudaMemGetInfo's total, MiB): what a process can "
                                             "allocate against, the CUDA context included. The memory model's "
                                             "capacity where set (else hbm_GB in GiB).")
    hbm_bandwidth_GBps: Pos = Field(description="HBM bandwidth in GB/s (datasheet).")
    nvlink_generation: int | None = Field(None, ge=1, le=1000, description="NVLink generation (3 A100, 4 H100/H200, 5 B200/GB200).")
    tdp_W: float | None = Field(None, gt=0, description="Board power limit (W, datasheet max TDP); sustained "
                                "clocks of compute-bound kernels depend on it (compute transfer).")
    sm_count: int | None = Field(None, gt=0, le=1_000_000, description="Streaming multiprocessors enabled on the part (wave "
                                 "quantisation of kernel tiles in the compute transfer, clustersim/calibration/transfer.py).")
    peak_clock_MHz: float | None = Field(None, gt=0, le=100_000, description="SM clock at which the datasheet "
                                         "peak_tflops are quoted (MHz).")
    boost_clock_MHz: float | None = Field(None, gt=0, le=100_000, description="Maximum SM boost clock (MHz): what "
                                          "short kernel bursts run at, so what measured kernel tables are timed at "
                                          "(compute transfer, clustersim/calibration/transfer.py).")
    source: str | None = Field(None, description="Where the figures come from.")

    @field_validator("peak_tflops")
    @classmethod
    def _needs_bf16(cls, v: dict[str, float]) -> dict[str, float]:
        if "bf16" not in v:
            raise ValueError("peak_tflops must give at least bf16")
        return v

    def boost_ratio(self) -> float | None:
        """Boost clock over the clock the datasheet peak is quoted at (``None`` where either is unknown).

        >>> round(GPU_CATALOG["H100-SXM"].boost_ratio(), 4), GPU_CATALOG["A100-SXM-80GB"].boost_ratio()
        (1.082, 1.0)
        >>> GPU_CATALOG["H100-PCIe"].boost_ratio() is None
        True
        """
        if self.peak_clock_MHz is None or self.boost_clock_MHz is None:
            return None
        return self.boost_clock_MHz / self.peak_clock_MHz

    def peak_flops(self, dtype: str) -> float:
        """Dense peak FLOP/s for ``dtype`` (fp16 falls back to bf16).

        >>> GPU_CATALOG["H100-SXM"].peak_flops("bf16")
        989400000000000.0
        """
        d = dtype.lower()
        if d in self.peak_tflops:
            return self.peak_tflops[d] * 1e12
        if d == "fp16":
            return self.peak_tflops["bf16"] * 1e12
        raise ClusterSimError(f"GPU {self.name} has no {dtype} peak (supported: {', '.join(sorted(self.peak_tflops))})",
                              field="dtype")

    @property
    def hbm_bytes(self) -> float:
        """Device memory capacity in bytes: CUDA's total where measured, else the datasheet's in GiB.

        >>> round(gpu_spec("h100-sxm").hbm_bytes / 2**30, 2), round(gpu_spec("a100-sxm-80gb").hbm_bytes / 2**30, 2)
        (79.18, 80.0)
        """
        if self.visible_memory_MiB is not None:
            return self.visible_memory_MiB * 2**20
        return self.hbm_GB * 2**30

    @property
    def hbm_bandwidth(self) -> float:
        """HBM bandwidth in bytes/s."""
        return self.hbm_bandwidth_GBps * 1e9


_A100_SRC = ("NVIDIA A100 Tensor Core GPU datasheet (2021): BF16 312 TFLOPS dense (624 sparse), TF32 156, "
             "FP32 19.5; 40GB HBM2 1,555 GB/s, 80GB HBM2e 2,039 GB/s")
_H100_SRC = ("NVIDIA H100 Tensor Core GPU datasheet (2023): SXM BF16 1,979 / FP8 3,958 TFLOPS with sparsity "
             "(dense = half), TF32 989 sparse, FP32 67; 80GB HBM3 3.35 TB/s. PCIe: BF16 1,513 / FP8 3,026 sparse, "
             "FP32 51; 80GB HBM2e 2 TB/s. SXM BF16/FP16 dense 989.4: the H100 architecture whitepaper's figure "
             "(1,978.9 sparse, which the datasheet prints as 1,979; 132 SMs x 4,096 FLOP/clock x 1.83 GHz)")
_H200_SRC = ("NVIDIA H200 Tensor Core GPU datasheet (2024): same compute as H100 SXM (BF16 1,979 / FP8 3,958 "
             "TFLOPS sparse, FP32 67; BF16/FP16 dense 989.4 as H100 SXM); 141GB HBM3e, 4.8 TB/s")
_H100_NVL_SRC = ("NVIDIA H100 NVL datasheet (2023), per GPU: BF16 1,671 / FP8 3,341 TFLOPS with sparsity "
                 "(dense = half), TF32 835 sparse, FP32 60; 94GB HBM3, 3.9 TB/s; NVLink bridge 600 GB/s")
#: SM counts (enabled SMs of the shipped part): A100 108 (NVIDIA A100 Tensor Core GPU Architecture
#: whitepaper, 2020, "108 SMs" of 128 on GA100), H100 SXM5 132 and H100 PCIe 114 (NVIDIA H100 Tensor Core
#: GPU Architecture whitepaper, 2022), H200 132 (same GH100 SXM part as H100 SXM), H100 NVL 132 (H100 NVL
#: datasheet), B200 148 (NVIDIA Blackwell architecture: 2 dies x 74 SMs enabled, as reported by deviceQuery).
#: SM clocks (MHz): the clock the dense peak is quoted at, and the maximum boost clock. A100 SXM: 1410 and
#: 1410 (A100 whitepaper, 2020: peak = 108 SMs x 2,048 dense FP16 FLOP/clock x 1.41 GHz, "GPU Boost Clock
#: 1410 MHz"). H100 SXM5: 1830 (H100 whitepaper, 2022: 132 SMs x 4,096 x 1.83 GHz = 989.4 TFLOPS) and 1980
#: (the part's maximum SM clock, nvidia-smi; the clock every lent H100 and H200 ran the project's probe kernels at,
#: validation/probes/pi-timed-section/pi-h100/clocks.csv, pi-h200x4/pi-clocks.csv). H200 SXM: the same die and clocks as H100 SXM.
#: B200 and GB200: the clock of the dense peak from the peak itself, peak / (148 SMs x 8,192 dense BF16 FLOP/clock,
#: twice Hopper's 4,096 per SM): B200 2,250 TFLOPS -> 1,856 MHz, GB200 2,500 -> 2,062 MHz; the boost clock from a
#: third-party specification table (hmc-tech.com/gpus/nvidia-b200-vs-nvidia-gb200, 2026: B200 boost 1.98 GHz and
#: 'tensor clock' 1.86 GHz, GB200 2.11 and 2.06 GHz, the latter two matching the peaks above), not an NVIDIA
#: datasheet. H100 PCIe / NVL: not stated here (unknown: the transfer then makes no clock correction).
#: Max TDP (W) from the same datasheets as the peaks: A100 SXM 400, H100 SXM 700, H100 PCIe 350, H100 NVL
#: 400 (datasheet 350-400), H200 SXM 700, B200 (HGX B200) 1000, GB200 (per GPU of the NVL72 superchip) 1200
_B200_SRC = ("NVIDIA HGX B200 datasheet (2024), 8 GPUs: FP8 72 PFLOPS, FP16/BF16 36 PFLOPS, TF32 18 PFLOPS "
             "(all with sparsity), FP32 600 TFLOPS, 1.4 TB HBM3e, 64 TB/s -> per GPU dense = /8 /2; "
             "HBM 180 GB, 8 TB/s per GPU")
_GB200_SRC = ("NVIDIA GB200 NVL72 datasheet (2024), 72 GPUs: FP8 720 PFLOPS, FP16/BF16 360 PFLOPS, TF32 180 "
              "PFLOPS (with sparsity), up to 13.4 TB HBM3e, 576 TB/s -> per GPU dense = /72 /2; HBM 186 GB "
              "(13.4 TB / 72), 8 TB/s per GPU. FP32 (non-tensor) is not in the datasheet: 80 TFLOPS is inferred "
              "from third-party Blackwell tables (B200 75, GB300 80)")

_GB300_SRC = ("NVIDIA GB300 NVL72 product page (2025), 72 GPUs: FP8 720 PFLOPS, FP16/BF16 360 PFLOPS (sparse) -> per GPU "
              "dense 5,000 / 2,500; up to 288 GB HBM3e and 8 TB/s per GPU; 1.4 kW per GPU; 160 SMs (NVIDIA technical blog "
              "'Inside NVIDIA Blackwell Ultra', 2025); FP32 80 TFLOPS and TF32 1,250 from third-party Blackwell Ultra tables")
_H100_96_SRC = ("torchtitan benchmarks/llama3_h100_202412_torchtitan.md (reference/published-runs.md section 9): Grand Teton "
                "H100 hosts, 96 GB HBM2e at 2.4 TB/s, 500 W power limit; compute and SMs as H100 SXM (the same GH100 "
                "SXM5 part, six HBM2e stacks instead of five HBM3)")
_VISIBLE_SRC = ("; visible memory: cudaMemGetInfo's total on the lent machines, 81,079 MiB on an H100 80GB HBM3 and "
                "143,156 MiB on an H200 (nvidia-smi: 81,559 and 143,771; validation/probes/nccl-memory-outside-allocator/h100x2/device-total.txt)")

GPU_CATALOG: dict[str, GPUSpec] = {
    g.name: g
    for g in [
        GPUSpec(name="A100-SXM-40GB", vendor_name="NVIDIA A100-SXM4-40GB", sm=80,
                peak_tflops={"bf16": 312, "fp16": 312, "tf32": 156, "fp32": 19.5},
                hbm_GB=40, hbm_bandwidth_GBps=1555, nvlink_generation=3, sm_count=108, tdp_W=400,
                peak_clock_MHz=1410, boost_clock_MHz=1410, source=_A100_SRC),
        GPUSpec(name="A100-SXM-80GB", vendor_name="NVIDIA A100-SXM4-80GB", sm=80,
                peak_tflops={"bf16": 312, "fp16": 312, "tf32": 156, "fp32": 19.5},
                hbm_GB=80, hbm_bandwidth_GBps=2039, nvlink_generation=3, sm_count=108, tdp_W=400,
                peak_clock_MHz=1410, boost_clock_MHz=1410, source=_A100_SRC),
        GPUSpec(name="H100-SXM", vendor_name="NVIDIA H100 80GB HBM3", sm=90,
                peak_tflops={"bf16": 989.4, "fp16": 989.4, "fp8": 1979, "tf32": 494.5, "fp32": 67},
                hbm_GB=80, hbm_bandwidth_GBps=3350, nvlink_generation=4, sm_count=132, tdp_W=700,
                peak_clock_MHz=1830, boost_clock_MHz=1980, source=_H100_SRC + _VISIBLE_SRC,
                visible_memory_MiB=81079),
        GPUSpec(name="H100-SXM-96GB", vendor_name="NVIDIA H100 96GB HBM2e", sm=90,
                peak_tflops={"bf16": 989.4, "fp16": 989.4, "fp8": 1979, "tf32": 494.5, "fp32": 67},
                hbm_GB=96, hbm_bandwidth_GBps=2400, nvlink_generation=4, sm_count=132, tdp_W=500,
                peak_clock_MHz=1830, boost_clock_MHz=1980, source=_H100_96_SRC),
        GPUSpec(name="H100-PCIe", vendor_name="NVIDIA H100 PCIe", sm=90,
                peak_tflops={"bf16": 756.5, "fp16": 756.5, "fp8": 1513, "tf32": 378, "fp32": 51},
                hbm_GB=80, hbm_bandwidth_GBps=2000, nvlink_generation=4, sm_count=114, tdp_W=350, source=_H100_SRC),
        GPUSpec(name="H100-NVL", vendor_name="NVIDIA H100 NVL", sm=90,
                peak_tflops={"bf16": 835.5, "fp16": 835.5, "fp8": 1670.5, "tf32": 417.5, "fp32": 60},
                hbm_GB=94, hbm_bandwidth_GBps=3900, nvlink_generation=4, sm_count=132, tdp_W=400, source=_H100_NVL_SRC),
        GPUSpec(name="H200-SXM", vendor_name="NVIDIA H200", sm=90,
                peak_tflops={"bf16": 989.4, "fp16": 989.4, "fp8": 1979, "tf32": 494.5, "fp32": 67},
                hbm_GB=141, hbm_bandwidth_GBps=4800, nvlink_generation=4, sm_count=132, tdp_W=700,
                peak_clock_MHz=1830, boost_clock_MHz=1980, source=_H200_SRC + _VISIBLE_SRC,
                visible_memory_MiB=143156),
        GPUSpec(name="B200", vendor_name="NVIDIA B200", sm=100,
                peak_tflops={"bf16": 2250, "fp16": 2250, "fp8": 4500, "tf32": 1125, "fp32": 75},
                hbm_GB=180, hbm_bandwidth_GBps=8000, nvlink_generation=5, sm_count=148, tdp_W=1000,
                peak_clock_MHz=1856, boost_clock_MHz=1980, source=_B200_SRC),
        GPUSpec(name="GB200", vendor_name="NVIDIA GB200", sm=100,
                peak_tflops={"bf16": 2500, "fp16": 2500, "fp8": 5000, "tf32": 1250, "fp32": 80},
                hbm_GB=186, hbm_bandwidth_GBps=8000, nvlink_generation=5, sm_count=148, tdp_W=1200,
                peak_clock_MHz=2062, boost_clock_MHz=2112, source=_GB200_SRC),
        GPUSpec(name="GB300", vendor_name="NVIDIA GB300", sm=100,
                peak_tflops={"bf16": 2500, "fp16": 2500, "fp8": 5000, "tf32": 1250, "fp32": 80},
                hbm_GB=288, hbm_bandwidth_GBps=8000, nvlink_generation=5, sm_count=160, tdp_W=1400, source=_GB300_SRC),
    ]
}


def gpu_spec(name: str) -> GPUSpec:
    """Look up a GPU model in :data:`GPU_CATALOG` (case-insensitive).

    >>> gpu_spec("h200-sxm").hbm_GB
    141.0
    """
    for k, v in GPU_CATALOG.items():
        if k.lower() == str(name).lower():
            return v
    raise ClusterSimError(f"unknown GPU model {name!r} (known: {', '.join(GPU_CATALOG)})", field="gpu")


# ---------------------------------------------------------------------------------------------
# Device names and ranges
# ---------------------------------------------------------------------------------------------

_DEV_RE = re.compile(r"^(gpu|nvswitch|pcie_switch|cpu|nic)(?:(\d+)|\[([0-9,\- ]+)\])$")


def expand_devices(text: str) -> list[str]:
    """Expand ``gpu[0-3]`` / ``nic[0,2]`` / ``cpu1`` into device names.

    >>> expand_devices("gpu[0-2,5]")
    ['gpu0', 'gpu1', 'gpu2', 'gpu5']
    """
    m = _DEV_RE.match(str(text).strip())
    if not m:
        raise ValueError(f"bad device name {text!r} (use gpu3, nvswitch0, pcie_switch1, cpu0, nic2 or a range gpu[0-7])")
    prefix, single, rng = m.groups()
    if single is not None:
        return [f"{prefix}{int(single)}"]
    out: list[int] = []
    for part in rng.split(","):
        part = part.strip()
        if not part:
            raise ValueError(f"bad range in {text!r}")
        if "-" in part:
            a, b = part.split("-", 1)
            try:
                lo, hi = int(a), int(b)
            except ValueError:
                raise ValueError(f"bad range in {text!r}") from None
            if hi < lo:
                raise ValueError(f"empty range {part!r} in {text!r}")
            if hi - lo + 1 + len(out) > MAX_NODE_DEVICES:
                raise ValueError(f"range {text!r} names {hi - lo + 1 + len(out):,} devices; the bound is "
                                 f"{MAX_NODE_DEVICES:,} ({BOUNDS['node devices'][1]})")
            out.extend(range(lo, hi + 1))
        else:
            try:
                out.append(int(part))
            except ValueError:
                raise ValueError(f"bad range in {text!r}") from None
    if len(out) > MAX_NODE_DEVICES:
        raise ValueError(f"range {text[:40]!r} names {len(out):,} devices; the bound is {MAX_NODE_DEVICES:,}")
    return [f"{prefix}{i}" for i in out]


def device_prefix(name: str) -> str:
    """``'pcie_switch3'`` -> ``'pcie_switch'``."""
    return name.rstrip("0123456789")


# ---------------------------------------------------------------------------------------------
# Node description
# ---------------------------------------------------------------------------------------------


class LinkSpec(StrictModel):
    """One set of links (both directions) between devices of a node.

    ``src`` and ``dst`` name devices or ranges. ``mode`` says how two ranges pair up:
    ``zip`` (default) pairs them in order, a single name on one side is paired
    with every name on the other, and when one range is a whole multiple of the
    other the longer side is split in consecutive blocks (``gpu[0-7]`` to
    ``pcie_switch[0-3]`` puts gpu0 and gpu1 on pcie_switch0); ``all`` links every
    src to every dst; ``pairs`` links every unordered pair of one range
    (``src: gpu[0-3], dst: gpu[0-3]``: six links).
    """

    src: str = Field(description="Device or range, e.g. 'gpu[0-7]'.")
    dst: str = Field(description="Device or range, e.g. 'nvswitch0'.")
    kind: LinkKind = Field(description="nvlink | pcie | infiniband | ethernet | cpu-interconnect.")
    count: bounded("node devices") = Field(1, description="Physical links bonded together (NVLink lanes into one chip).")
    bandwidth_GBps: Pos = Field(description="Per physical link, per direction, GB/s (1e9 B/s).")
    latency_us: NonNeg = Field(0.0, description="One-way latency of one traversal, microseconds.")
    mode: Literal["zip", "all", "pairs"] = "zip"
    note: str | None = Field(None, description="Source or reasoning for these figures.")

    @field_validator("src", "dst")
    @classmethod
    def _names(cls, v: str) -> str:
        expand_devices(v)
        return v

    def pairs(self) -> list[tuple[str, str]]:
        """The (src, dst) device pairs this entry links."""
        a, b = expand_devices(self.src), expand_devices(self.dst)
        n_pairs = len(a) * len(b) if self.mode == "all" else len(a) * (len(a) - 1) // 2 if self.mode == "pairs" else 0
        if n_pairs > MAX_NODE_LINKS:
            raise ValueError(f"mode {self.mode!r} of {len(a):,} x {len(b):,} devices makes {n_pairs:,} links; the bound "
                             f"is {MAX_NODE_LINKS:,} ({BOUNDS['node links'][1]})")
        if self.mode == "all":
            return [(x, y) for x in a for y in b]
        if self.mode == "pairs":
            if a != b:
                raise ValueError("mode 'pairs' needs the same range on src and dst")
            return [(a[i], a[j]) for i in range(len(a)) for j in range(i + 1, len(a))]
        if len(a) == len(b):
            return list(zip(a, b))
        if len(a) == 1:
            return [(a[0], y) for y in b]
        if len(b) == 1:
            return [(x, b[0]) for x in a]
        if len(a) % len(b) == 0:
            k = len(a) // len(b)
            return [(x, b[i // k]) for i, x in enumerate(a)]
        if len(b) % len(a) == 0:
            k = len(b) // len(a)
            return [(a[i // k], y) for i, y in enumerate(b)]
        raise ValueError(f"cannot pair {len(a)} src devices with {len(b)} dst devices (use mode: all)")


def _node_error(reason: str, field: str) -> ClusterSimError:
    # A ClusterSimError (not ValueError) passes through pydantic untouched, so the message keeps
    # the exact field path (node.links.3) instead of pydantic's model-level location.
    return ClusterSimError(reason, field=f"node.{field}")


class NodeSpec(StrictModel):
    """The devices of one node preset and the links between them."""

    gpus: bounded("node devices") = Field(description="GPUs per node (rank order = gpu index).")
    nvswitches: Devices = Field(0, description="NVSwitch chips.")
    pcie_switches: Devices = Field(0, description="PCIe switches.")
    cpus: bounded("node devices") = Field(1, description="CPU sockets (host memory lives behind them).")
    nics: Devices = Field(0, description="Network adapters used for GPU traffic (one rail each on a rail-optimised fabric).")
    nic_speed_Gbps: Pos | None = Field(None, description="Line rate of one NIC in Gbit/s per direction (400 = NDR, 200 = HDR).")
    nic_kind: Literal["infiniband", "ethernet"] = Field("infiniband", description="Fabric the NICs attach to.")
    nic_of_gpu: list[int] | None = Field(
        None, description="NIC (rail) serving each GPU; default: GPU i uses NIC i*nics//gpus."
    )
    nvswitch_multicast: bool | None = Field(
        None, description="NVLink SHARP / multicast (NVLS) in the NVSwitch chips; default: NVSwitch present and GPU sm >= 90."
    )
    links: list[LinkSpec] = Field(default_factory=list, description="Links inside the node (NIC uplinks to the fabric are implied).")

    def device_names(self) -> list[str]:
        """All device names of the node, in a stable order (GPUs first)."""
        out: list[str] = []
        for prefix, (field, _) in DEVICE_PREFIXES.items():
            out.extend(f"{prefix}{i}" for i in range(getattr(self, field)))
        return out

    def expanded_links(self) -> list[tuple[str, str, LinkSpec]]:
        """Every link as (src, dst, entry)."""
        return [(a, b, ls) for ls in self.links for a, b in ls.pairs()]

    def rail_of_gpu(self) -> list[int]:
        """NIC index serving each GPU (empty list when the node has no NIC)."""
        if self.nics == 0:
            return []
        if self.nic_of_gpu is not None:
            return list(self.nic_of_gpu)
        return [i * self.nics // self.gpus for i in range(self.gpus)]

    @model_validator(mode="after")
    def _check(self) -> "NodeSpec":
        known = set(self.device_names())
        parent = {d: d for d in known}

        def find(x: str) -> str:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        degree: dict[str, int] = {d: 0 for d in known}
        total = 0
        for i, ls in enumerate(self.links):
            try:
                pairs = ls.pairs()
            except ValueError as exc:
                raise _node_error(str(exc), f"links.{i}") from None
            total += len(pairs)
            if total > MAX_NODE_LINKS:
                raise _node_error(f"the links expand to more than {MAX_NODE_LINKS:,} device pairs "
                                  f"({BOUNDS['node links'][1]})", f"links.{i}")
            for a, b in pairs:
                for d in (a, b):
                    if d not in known:
                        prefix = device_prefix(d)
                        field = DEVICE_PREFIXES[prefix][0]
                        raise _node_error(f"device {d!r} does not exist (the node has {field}: "
                                          f"{getattr(self, field)})", f"links.{i}")
                if a == b:
                    raise _node_error(f"link from {a!r} to itself", f"links.{i}")
                if ls.kind == "nvlink" and ({device_prefix(a), device_prefix(b)} - {"gpu", "nvswitch", "cpu"}):
                    raise _node_error(f"an nvlink joins GPUs, NVSwitch chips or a CPU, not {a!r}-{b!r}", f"links.{i}")
                degree[a] += 1
                degree[b] += 1
                parent[find(a)] = find(b)
        gpus = [f"gpu{i}" for i in range(self.gpus)]
        for g in gpus:
            if degree[g] == 0:
                raise _node_error(f"{g} is not connected to anything (every GPU needs a link)", "links")
        root = find(gpus[0])
        for g in gpus[1:]:
            if find(g) != root:
                raise _node_error(f"{g} is not connected to gpu0 (disconnected GPU)", "links")
        for i in range(self.nics):
            if find(f"nic{i}") != root:
                raise _node_error(f"nic{i} is not connected to the GPUs", "links")
        if self.nics and self.nic_speed_Gbps is None:
            raise _node_error("required when the node has NICs", "nic_speed_Gbps")
        if self.nic_of_gpu is not None:
            if len(self.nic_of_gpu) != self.gpus:
                raise _node_error(f"needs one entry per GPU ({self.gpus}), got {len(self.nic_of_gpu)}", "nic_of_gpu")
            bad = [r for r in self.nic_of_gpu if not 0 <= r < self.nics]
            if bad:
                raise _node_error(f"names NIC {bad[0]} but the node has {self.nics} NICs", "nic_of_gpu")
        return self


# ---------------------------------------------------------------------------------------------
# Cluster fabric
# ---------------------------------------------------------------------------------------------


class FabricSpec(StrictModel):
    """A folded-Clos (fat-tree) fabric joining the NICs of all nodes."""

    kind: Literal["fat_tree"] = "fat_tree"
    rail_optimized: bool = Field(True, description="NIC i of every node goes to the leaf switches of rail i.")
    switch_radix: bounded("node devices", minimum=4) = Field(64, description="Ports per switch (64 Quantum-2 NDR, 40 Quantum HDR).")
    tiers: Literal["auto", 1, 2, 3] = Field(
        "auto", description="Switch levels (1, 2 or 3), or 'auto' (null means the same): the fewest that hold the "
        "nodes at this radix and oversubscription, as a DGX SuperPOD grows (leaf/spine inside a group of scalable "
        "units, a core tier above once the leaves outgrow one spine layer). An explicit value is checked against "
        "the node count.")
    oversubscription: float = Field(1.0, ge=1.0, le=1e6, description="Leaf down:up port ratio (2.0 = 2:1).")
    link_speed_Gbps: Pos | None = Field(None, description="Switch-to-switch cable rate; default: the NIC speed.")
    latency_us: NonNeg = Field(
        0.3, description="One-way latency per fabric link traversal incl. one switch hop; Quantum-2 port-to-port is "
        "quoted between ~0.15 and ~0.33 us by third parties (no NVIDIA figure), so 0.3 us is an inferred round value."
    )

    @field_validator("tiers", mode="before")
    @classmethod
    def _tiers(cls, v: Any) -> Any:
        if v is None or (isinstance(v, str) and v.strip().lower() == "auto"):
            return "auto"
        if isinstance(v, str) and v.strip() in ("1", "2", "3"):
            return int(v)  # from a --set override
        if isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 3:
            return v
        raise ValueError(f"must be 1, 2, 3 or 'auto' (the fewest tiers that fit), got {v!r}")

    @field_validator("switch_radix")
    @classmethod
    def _even(cls, v: int) -> int:
        if v % 2:
            raise ValueError("switch_radix must be even")
        return v


class TopologyClusterSection(StrictModel):
    """The ``cluster:`` section of a topology file: replicate the node preset on a fabric."""

    nodes: bounded("nodes") = Field(1, description="Number of node replicas.")
    fabric: FabricSpec = Field(default_factory=FabricSpec)


# ---------------------------------------------------------------------------------------------
# The file
# ---------------------------------------------------------------------------------------------


class TopologySpec(StrictModel):
    """A topology file: a node preset and an optional cluster section."""

    name: str = Field(description="Short name (the file's bare name for shipped presets).")
    description: str | None = None
    gpu: str | GPUSpec = Field(description="GPU catalogue name (H100-SXM, H200-SXM, A100-SXM-80GB, ...) or a full GPU spec.")
    default_profile: str | None = Field(None, description="Calibration profile name used when a scenario gives none.")
    node: NodeSpec
    cluster: TopologyClusterSection | None = None
    sources: list[str] = Field(default_factory=list, description="Vendor documents and pages the figures come from.")
    inferred: list[str] = Field(default_factory=list, description="Fields not taken from a source (inferred or assumed).")
    notes: str | None = None
    provenance: list[Provenance] = Field(default_factory=list, description="How each entry is known "
                                         "(clustersim/config/provenance.py): published or assumed, per field.")

    @field_validator("gpu")
    @classmethod
    def _gpu_known(cls, v: str | GPUSpec) -> str | GPUSpec:
        if isinstance(v, str):
            try:
                gpu_spec(v)
            except ClusterSimError as exc:
                raise ValueError(exc.reason) from None
        return v

    @property
    def gpu_spec(self) -> GPUSpec:
        """The resolved :class:`GPUSpec`."""
        return self.gpu if isinstance(self.gpu, GPUSpec) else gpu_spec(self.gpu)

    @model_validator(mode="after")
    def _cluster_needs_nics(self) -> "TopologySpec":
        if self.cluster is not None and self.cluster.nodes > 1 and self.node.nics == 0:
            raise ValueError("cluster.nodes > 1 needs NICs in the node (node.nics)")
        return self


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _deep_merge(out[k], v)
        else:
            out[k] = v
    return out


def load_topology_data(path: str | Path, _depth: int = 0) -> dict[str, Any]:
    """Read a topology file as a dict, resolving ``extends: <preset>`` (deep merge, this file wins).

    The SuperPOD preset extends ``dgx-h100``: the node comes from the parent, the fabric from the file:

    >>> from clustersim.config.base import shipped_dir
    >>> d = load_topology_data(shipped_dir("topology") / "dgx-h100-superpod.yaml")
    >>> "extends" in d, d["gpu"], d["node"]["gpus"], d["cluster"]["nodes"]
    (False, 'H100-SXM', 8, 128)
    """
    data = load_yaml(path)
    parent = data.pop("extends", None)
    if parent is None:
        return data
    if _depth >= 5:
        raise ClusterSimError("'extends' nested more than 5 deep (a cycle?)", file=str(path), field="extends")
    if not isinstance(parent, str):
        raise ClusterSimError("must be a topology name or path", file=str(path), field="extends")
    try:
        ppath = resolve_file(parent, "topology", base=Path(path).resolve().parent)
    except ClusterSimError as exc:
        raise ClusterSimError(exc.reason, file=str(path), field="extends") from None
    if ppath.resolve() == Path(path).resolve():
        raise ClusterSimError("a topology cannot extend itself", file=str(path), field="extends")
    base = load_topology_data(ppath, _depth + 1)
    for k in ("sources", "inferred", "provenance"):
        if isinstance(base.get(k), list) and isinstance(data.get(k), list):
            data[k] = base[k] + [x for x in data[k] if x not in base[k]]
    return _deep_merge(base, data)


def load_topology_spec(path: str | Path) -> TopologySpec:
    """Load and validate a topology file (ClusterSimError naming file, field and rule on bad input).

    >>> from clustersim.config.base import shipped_dir
    >>> spec = load_topology_spec(shipped_dir("topology") / "hgx-h200.yaml")
    >>> spec.name, spec.gpu_spec.hbm_bandwidth_GBps, spec.node.nics, spec.node.nic_speed_Gbps
    ('hgx-h200', 4800.0, 8, 400.0)
    """
    return validate(TopologySpec, load_topology_data(path), file=str(path))
