"""What ``make_profiles.py`` and ``collective_band.py`` share: where the recipe's inputs are, how they are read,
the published base values and the fit's NCCL helpers.

Both scripts import this module and neither imports the other's top level, so the recipe has no import circle
(``make_profiles.py`` calls ``collective_band.uncertainty_sections``; ``collective_band.py`` refits ``hgx-h200`` on
the 2-rank bench with the pieces below).

Every input path is relative to the repository root and is read through :func:`path`, which records it under the
profile being built (:func:`reading_for`): ``make_profiles.py`` compares those records with ``profiles/inputs.yaml``,
the file that names every input of every shipped number.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

from clustersim.calibration.fit import Measurements, read_measurements

ROOT = Path(__file__).resolve().parents[1]   # the repository root
PROFILES = ROOT / "profiles"
COMMAND = "python profiles/make_profiles.py"

# ---- inputs (repository-relative; profiles/inputs.yaml says how, where and when each was measured)
#: the CUDA-graph / eager / framework collective bench on 2 and 4 H200 ranks of one host (2026-11-22)
H200_COLLECTIVES = ["profiles/measurements/h200x2/bench-graph.jsonl", "profiles/measurements/h200x4/bench-graph.jsonl"]
#: the first bench run on 2 H200: its gemm, hbm and launch rows (its collective rows are eager timings)
H200_COMPUTE = "profiles/measurements/h200x2/bench-run1.jsonl"
H100_COMPUTE = "profiles/measurements/h100/bench.jsonl"
#: the collective bench on 2 H100 80GB HBM3 of one host (NV18 into NVSwitch, NCCL 2.28.9, NVLS off), 2026-11-27,
#: predicted blind first (validation/collectives-h100-blind_h100x2-h100x4_2026-11-27/h100x2/predictions.json)
H100_COLLECTIVES = "profiles/measurements/h100x2/bench-graph.jsonl"
#: the pi exercise's kernel on each of 4 H200 at once (validation/probes/fsdp2-step-traces/diag8.sh pi, 2026-11-26)
H200_PI_GPUS = "profiles/measurements/h200x4/pi-gpus.txt"
#: the first all-reduce of a fresh communicator behind a long kernel on 2 and 4 H200
#: (validation/probes/first-collective-cost/first_collective.py)
H200_FIRST_COLLECTIVE = "profiles/measurements/h200x4/first_collective.jsonl"
#: the pi exercise's timed section on 1, 2, 4 H100 of one host, 3 runs each
#: (validation/probes/pi-timed-section/strong_scaling.sh)
H100_PI_STRONG = "profiles/measurements/h100x4/pi-strong.jsonl"
#: kernel-class rows (``calibrate bench --ops none --kernels``, rank 0 of the job), re-measured 2026-11-24 with
#: attention timed as in training (profiles/measurements/h200x2/kernels.jsonl and h100/kernels.jsonl, the first
#: sweeps, timed the attention backward with a scatter into a fused leaf and are not read)
H200_KERNELS = "profiles/measurements/h200/kernels.jsonl"
#: FP8 and MoE kernel classes of one H200 (validation/probes/fp8-and-moe-kernels/run_h200.sh, 2026-12-02)
H200_FP8 = "profiles/measurements/h200/kernels-fp8-20261202.jsonl"
H200_EXPERTS = "profiles/measurements/h200/kernels-experts-20261202.jsonl"
#: the expert loop as training runs it (validation/probes/fp8-and-moe-kernels/run_loop_h200.sh, 2026-12-02, 2nd call)
H200_EXPERTS_LOOP = "profiles/measurements/h200/kernels-experts-loop-20261202.jsonl"
H100_KERNELS = "profiles/measurements/h100/kernels-20261124.jsonl"
#: an eager attention core's batched GEMMs by shape on one H200 (validation/probes/attention-bmm-by-shape/)
H200_BMM = "profiles/measurements/h200/attention-bmm.jsonl"
#: GEMMs across wave boundaries on one H200 (validation/probes/gemm-partial-wave/): the library's fill below one wave
H200_WAVES = "profiles/measurements/h200/wave-sweep.jsonl"
#: compute kernels alone vs beside a 256 MiB NCCL collective on 2 H100 of one host
#: (validation/probes/compute-beside-collectives/overlap_probe.py, measured with blind set 6, 2026-11-26)
H100_OVERLAP = "profiles/measurements/h100x2/overlap.jsonl"
#: the same probe on 2 of 4 H200 of one VM (2026-11-26, with blind set 9)
H200_OVERLAP = "profiles/measurements/h200x4/overlap.jsonl"
#: compute kernels alone vs beside a posted NCCL receive / send that waits for its peer, 2 of 4 H100 of two VMs
#: (validation/probes/p2p-waiting-kernel/p2p_resident.py, 2026-11-27)
P2P_RESIDENT = ("profiles/measurements/h100x4/p2p_resident-run1.jsonl",
                "profiles/measurements/h100x4/p2p_resident-run2.jsonl")
#: the same probe on 2 H200 of one VM (validation/probes/p2p-waiting-kernel/h200_probes.sh, 2026-11-27)
P2P_RESIDENT_H200 = ("profiles/measurements/h200x2/p2p_resident.jsonl",)
#: the clock's averaging window: bf16 GEMMs cycled with idle time, one H100
#: (validation/probes/clock-idle-window/clock_idle.py, 2026-11-27)
CLOCK_IDLE = "profiles/measurements/h100/clock_idle.jsonl"
#: the same probe on one H200 (validation/probes/p2p-waiting-kernel/h200_probes.sh, 2026-11-27)
CLOCK_IDLE_H200 = "profiles/measurements/h200/clock_idle.jsonl"
#: nccl-tests all_reduce logs of Azure NDv4 (8x A100-SXM4-40GB per node on NVSwitch, 12 NVLink3 per GPU,
#: 8x HDR 200 Gb/s InfiniBand per node) on 8 GPUs (one node) and 16 GPUs (two nodes): the link model of the
#: A100 profiles in make_profiles.A100_LINK_MODEL. The 32-GPU log of the same set is the held-out transfer check of
#: issue 13 (:data:`A100_HELD_OUT_LOG`), kept in its study folder.
A100_COLLECTIVES = ["profiles/measurements/a100-azure-ndv4/all_reduce_8.log",
                    "profiles/measurements/a100-azure-ndv4/all_reduce_16.log"]
A100_HELD_OUT_LOG = "validation/a100-link-model-32gpu-heldout_a100-azure-ndv4_2026-11-26/all_reduce_32.log"

# ---- what was read, per profile being built
_READS: dict[str, set[str]] = {}
_FOR: list[str] = ["(outside a profile)"]


@contextlib.contextmanager
def reading_for(name: str):
    """Record every :func:`path` inside the block under ``name`` (a profile, or a band of collective_band.py)."""
    _FOR.append(name)
    try:
        yield
    finally:
        _FOR.pop()


def path(rel: str) -> Path:
    """The input ``rel`` (repository-relative) as a path, recorded under the profile being built."""
    _READS.setdefault(_FOR[-1], set()).add(rel)
    return ROOT / rel


def reads() -> dict[str, list[str]]:
    """Every input read so far, per profile (or band) it was read for."""
    return {k: sorted(v) for k, v in _READS.items()}


def read(rel: str, kinds: tuple[str, ...] | None = None) -> Measurements:
    """The bench rows of ``rel`` (``kinds`` only, meta rows kept), their file named by its repository path."""
    meas = read_measurements([path(rel)])
    for msg in meas.skipped:
        print(f"warning: {msg}", file=sys.stderr)
    if kinds is not None:
        meas.rows = [r for r in meas.rows if r["kind"] in kinds or r["kind"] == "meta"]
    meas.files = [rel]
    return meas


def merge(*parts: Measurements) -> Measurements:
    out = Measurements()
    for p in parts:
        out.rows.extend(p.rows)
        out.files.extend(p.files)
        out.skipped.extend(p.skipped)
    return out


#: Link classes: the bandwidth NCCL reaches and the line rate of the DGX/HGX H100/H200 node it refers to
#: (``line_rate_GBps``, the topology's figure: 18 NVLink4 x 25 GB/s, PCIe Gen5 x16 63 GB/s, NDR 400G 50 GB/s);
#: the simulator uses their ratio, the efficiency, times the line rate of the topology it runs on.
LINKS_PUBLISHED = {
    "nvlink": {"latency_us": 3.4, "bandwidth_GBps": 370.8, "line_rate_GBps": 450.0},
    "pcie": {"latency_us": 5.7, "bandwidth_GBps": 48.0, "line_rate_GBps": 63.0},
    "network": {"latency_us": 14.0, "bandwidth_GBps": 48.0, "line_rate_GBps": 50.0},
}

BASE_H200 = {
    "name": "hgx-h200",
    "description": "HGX H200 8-GPU: NCCL-model link classes (published) plus collectives, host and compute "
                   "measured on 2 and 4 H200 GPUs of one host",
    "source": {"gpu": "NVIDIA H200", "nvls": False, "measured": False},
    "links": LINKS_PUBLISHED,
    "nvls": False,
    "host": {"per_call_overhead_us": 8.0},
    "compute": {"dtype": "bf16", "kernel_launch_us": 4.0},
}


def nccl_switches(topology: str, base):
    """``switches(op, ranks, scope)`` for the fit: where NCCL's tuner (the NCCL-structured model on the
    topology with the base profile's published link classes, no entries) changes protocol."""
    from clustersim.collectives.model import CollectiveModel, tuner_switches
    from clustersim.topology import load_cluster

    bare = base.model_copy(update={"collectives": []})
    cache: dict = {}

    def switches(op: str, ranks: int | None, scope: str | None) -> list[float]:
        if ranks is None or scope != "intra":
            return []
        if ranks not in cache:
            cache[ranks] = CollectiveModel(load_cluster(topology, gpus=ranks), bare)
        return tuner_switches(cache[ranks], op, ranks)

    return switches


def link_model_section(meas: Measurements, topology: str = "hgx-h200", *, gap_us: float = 0.0,
                       unmeasured_from: str | None = None, note: str = "") -> dict:
    """:func:`clustersim.calibration.fit.link_section.link_model_section`, written by ``make_profiles.py``."""
    from clustersim.calibration.fit.link_section import link_model_section as section
    from clustersim.collectives.model import communicator_lines
    from clustersim.errors import ClusterSimError

    try:
        most = max(int(r.get("ranks") or 2) for r in meas.rows if r.get("kind") == "collective")
        lines, sm = communicator_lines(topology, most)
        return section(meas, topology, lines, sm, gap_us=gap_us, unmeasured_from=unmeasured_from, note=note,
                       command=COMMAND)
    except ClusterSimError as exc:
        raise SystemExit(str(exc)) from None
