"""Regenerate the default profiles ``hgx-h200`` and ``dgx-h100`` from the raw measurements, and the
compute sections of the profiles of unmeasured GPUs (``TRANSFERRED``: A100, B200, GB200) from them.

Command (from the repository root; reproducible: same inputs -> same files, no date of its own)::

    python profiles/make_profiles.py            # writes profiles/{hgx-h200,dgx-h100}.yaml and the
                                                 # compute section of {dgx-a100,cannon-4xa100,dgx-b200,gb200-nvl72}.yaml
                                                 # and azure-ndv4's link_model section
    python profiles/make_profiles.py --check    # exits 1 when a shipped profile differs from a fresh fit
    python profiles/make_profiles.py --bar odd  # issue 5's Bar table on the bench (fit even sizes, predict odd)

What goes where (``profiles/inputs.yaml`` says how, where and when each input was measured):

* ``hgx-h200``: published / NCCL-derived base values (link classes, NVLS default; the numbers and
  their sources are in ``BASE_H200`` of ``recipe_base.py`` and are *not* measured -- a 2-rank send/recv alpha is a
  whole-call cost, not NCCL's per-hop latency, so the link classes are never overwritten by the fit)
  + collective entries fitted (:func:`clustersim.calibration.fit.fit_profile`) from the CUDA-graph /
  eager / framework bench on 2 and 4 H200 ranks of one host (``profiles/measurements/h200x2/bench-graph.jsonl``,
  ``profiles/measurements/h200x4/bench-graph.jsonl``: every op, every mode, ``ranks`` and ``scope: intra`` set)
  + the ``link_model`` section (:func:`link_model_section`: the link model fitted jointly on every
  NCCL-level row of the same two files at ``hgx-h200``'s NVLink line rate; no network class, none was
  measured), which the simulator uses where no entry matches (8 ranks, ...)
  + host (framework call, per-call overhead, communicator start-up at 2 and 4 ranks)
  + compute (GEMM table / plateau / roll-off, HBM copy bandwidth, GPU-side kernel gap) from the
  ``gemm``, ``hbm`` and ``launch`` rows of ``profiles/measurements/h200x2/bench-run1.jsonl``. That file's
  ``collective`` rows are *not* used: they were timed back to back through eager calls although
  labelled ``mode: nccl`` (the bench had no CUDA-graph mode yet).
* ``dgx-h100``: the published NCCL / link values of DGX H100 (no multi-GPU H100 has been measured)
  + the compute part fitted from ``profiles/measurements/h100/bench.jsonl`` (1x H100 80GB HBM3).
  + ``host.fsdp_hook_us`` from the FSDP2 host probe ``validation/host7-fsdp2-hook_h100x2_2026-11-26/train_steps.jsonl`` (2 H100 of one
  VM; ``profiles/fsdp_hook.py``), for this profile only (host speed differs between VMs).
* both: the kernel-class tables (``attention_table``, ``gemm_layout_table``, ``memory_table``;
  :func:`fit_kernels`) from the ``kernel`` rows of ``profiles/measurements/h200/kernels.jsonl`` resp.
  ``profiles/measurements/h100/kernels-20261124.jsonl`` (``calibrate bench --ops none --kernels``), when the file exists.
* ``dgx-a100``, ``azure-ndv4``, ``cannon-4xa100`` (from dgx-h100), ``dgx-b200`` and ``gb200-nvl72`` (from hgx-h200): the hand-written
  published link values are kept; the ``compute`` section is the measured one transferred by roofline
  (:func:`clustersim.calibration.transfer.transfer_compute`, see :data:`TRANSFERRED`), with ``provenance``.
* ``azure-ndv4`` also: the ``link_model`` section (:func:`a100_link_model`) fitted on the nccl-tests all_reduce
  logs of Azure NDv4 A100 nodes at 8 and 16 GPUs (``profiles/measurements/a100-azure-ndv4``, :data:`A100_COLLECTIVES`) at
  the ``azure-ndv4`` preset's NVLink and network line rates; the 32-GPU log of that set is held out
  (``tests/unit/test_a100_link_model.py``). Not ``dgx-a100`` (a DGX A100 on Selene's fabric is another
  machine: its published NCCL-model link classes stay) nor ``cannon-4xa100`` (:data:`A100_LINK_MODEL`).
* every profile: the ``uncertainty`` section (``profiles/collective_band.py``): ``hgx-h200`` the 2 -> 4 rank
  held-out error, ``azure-ndv4`` its link model's error on the held-out 32-GPU log, the others the published
  link classes' error on the A100 logs.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import copy
import sys
from pathlib import Path

import yaml

from clustersim.calibration.fit import Measurements, fit_profile, profile_yaml
from clustersim.calibration.fit.kernels import fit_kernels
from clustersim.config.base import validate
from clustersim.config.profile import Profile
from fsdp_hook import (H200_PROBE, HOST_PROBE_RUNS, HOST_PROBE_SUMMARIES, OPTIMIZER_ROWS, PROBE, fsdp_hook_table,
                       fsdp_hook_us, host_speed_band, optimizer_host)
from recipe_base import (A100_COLLECTIVES, BASE_H200, CLOCK_IDLE, CLOCK_IDLE_H200, COMMAND, H100_COLLECTIVES,
                         H100_COMPUTE, H100_KERNELS, H100_OVERLAP, H100_PI_STRONG, H200_BMM, H200_COLLECTIVES,
                         H200_COMPUTE, H200_EXPERTS, H200_EXPERTS_LOOP, H200_FIRST_COLLECTIVE, H200_FP8, H200_KERNELS, H200_OVERLAP, H200_PI_GPUS, H200_WAVES,
                         LINKS_PUBLISHED, P2P_RESIDENT, P2P_RESIDENT_H200, PROFILES, ROOT, link_model_section,
                         nccl_switches, path, reading_for, reads)
import recipe_base
from recipe_base import merge as _merge
from recipe_base import read as _read

H100_FSDP_PROBE = PROBE
#: the same probe on 2 and on 4 ranks of one 4x H200 VM (host8's configs.txt), 2026-11-26
H200_FSDP_PROBE = H200_PROBE
COMPUTE_KINDS = ("gemm", "hbm", "launch")

#: A100 profiles whose topology has the link classes and line rates measured on NDv4 (NVLink3 12 x 25 GB/s per
#: GPU into NVSwitch, 8 NICs of 25 GB/s per node). Not cannon-4xa100: its 4 GPUs are NVLink-connected in pairs
#: (4 links = 100 GB/s per pair, no NVSwitch) and its node has one HDR100 NIC (12.5 GB/s) for 4 GPUs.
A100_LINK_MODEL = ("azure-ndv4",)
A100_MACHINE = (
    "Machine measured: Azure NDv4 (8x A100-SXM4-40GB per node on NVSwitch, 12 NVLink3 x 25 GB/s per GPU, "
    "8x HDR 200 Gb/s InfiniBand per node; old-format nccl-tests logs, NCCL version not printed), not a DGX "
    "A100: the same GPU die, NVSwitch and 8x HDR 200G per node, another host and fabric; the efficiencies and "
    "latencies learned there are applied to the azure-ndv4 preset's line rates (the DGX A100 node design "
    "with the 40GB GPU), which are the ones measured; not to dgx-a100 (another host and fabric). Only "
    "all_reduce was measured (8 GPUs = 1 node, 16 GPUs = 2 nodes); the 32-GPU log of the set is held out "
    "(docs/calibration.md)")

LINK_SOURCES = (
    "nvlink.bandwidth_GBps = 18 links x 20.6 GB/s (NCCL SM90_NVLINK_BW, src/graph/topo.h:22; log line "
    "'NVL[370.8] - NVS/0' in nccl#1189) of a 450 GB/s line rate (18 x 25 GB/s); nvlink.latency_us = NCCL hwLat "
    "NVLINK Ring Simple 3.4 us (tuning.cc). network.bandwidth_GBps = 48 GB/s achievable per CX-7 NDR 400G "
    "(AddyLaddy, nccl-tests#267; NCCL models 50) of 50 GB/s; network.latency_us = NCCL hwLat NET Ring Simple "
    "14 us. pcie: x16 Gen5 = 16*240/80 = 48 GB/s (topo.cc:651-657) of 63 GB/s, PCI Ring Simple hop 5.7 us. "
    "The simulator uses bandwidth / line rate (the efficiency) times the line rate of the topology it runs on."
)

BASE_H100 = {
    "name": "dgx-h100",
    "description": "DGX H100 / HGX H100 8-GPU: published and NCCL-model link values (no multi-GPU H100 measured); "
                   "compute part measured on one H100 80GB HBM3",
    "source": {"gpu": "NVIDIA H100 80GB HBM3", "host": "DGX H100",
               "nccl_version": "2.30 (tuning.cc constants at NVIDIA/nccl 5067397c)", "nvls": True,
               "measured": False},
    "links": LINKS_PUBLISHED,
    "nvls": True,
    "host": {"per_call_overhead_us": 8.0},
    "compute": {"dtype": "bf16", "gemm_efficiency": 0.75, "kernel_launch_us": 4.0},
}


def _meta(meas: Measurements) -> dict:
    return next((r for r in meas.rows if r["kind"] == "meta"), {})


def _r4(x: float) -> float:
    return float(f"{x:.4g}")


def _add_kernels(data: dict, rel: str) -> None:
    """Fit the kernel-class tables of ``data['compute']`` from ``rel`` when it exists (else leave them out)."""
    from clustersim.calibration.fit import peak_tflops_for

    file = path(rel)
    if not file.is_file():
        print(f"warning: {rel} not found: no kernel-class tables", file=sys.stderr)
        return
    from clustersim.calibration.jsonl import read_rows

    allrows = read_rows(file)  # (fit.read_measurements keeps only the kinds fit_profile uses)
    rows = [r for r in allrows if r.get("kind") == "kernel" and r.get("dtype") == "bf16"]
    meta = next((r for r in allrows if r.get("kind") == "meta"), {})
    comp = data["compute"]
    peak = comp.get("peak_tflops") or peak_tflops_for(meta.get("gpu"))
    comp.update(fit_kernels(rows, float(peak), float(comp["hbm_bandwidth_GBps"]), float(comp["kernel_launch_us"])))
    data["source"]["files"] = list(data["source"].get("files", [])) + [rel]


def _add_fp8_and_experts(data: dict, rels: tuple[str, ...]) -> None:
    """The FP8 and MoE kernel classes of ``data['compute']`` (:func:`fit_fp8_and_experts`; their memory-bound classes
    join ``memory_table``) from the bench files ``rels`` (``--kernel-classes fp8`` and ``experts``)."""
    from clustersim.calibration.fit import peak_tflops_for
    from clustersim.calibration.fit.kernels import fit_fp8_and_experts
    from clustersim.calibration.jsonl import read_rows

    # the loop file (2nd call) is read for its training-loop rows only: the rest repeats the first experts file
    rows = [r for rel in rels for r in read_rows(path(rel)) if r.get("kind") in ("kernel", "meta")
            and (rel != H200_EXPERTS_LOOP or str(r.get("name", "")).startswith(("moe_loop_fwd",)))]
    meta = next((r for r in rows if r.get("kind") == "meta"), {})
    comp = data["compute"]
    peak, launch = float(comp.get("peak_tflops") or peak_tflops_for(meta.get("gpu"))), float(comp["kernel_launch_us"])
    kern = [r for r in rows if r.get("kind") == "kernel"]
    extra = fit_kernels([r for r in kern if r.get("dtype") == "bf16"], peak, float(comp["hbm_bandwidth_GBps"]), launch)
    # the expert-shape GEMMs (16-4,096 tokens) are a table of their own: read by experts only, so that no dense
    # layer's nearest measured shape becomes an expert's
    comp["expert_gemm_table"] = extra["gemm_layout_table"]
    comp["memory_table"] = sorted(comp["memory_table"] + extra["memory_table"],
                                  key=lambda r: (r["op"], r.get("hidden", 0), r["bytes"]))
    comp.update(fit_fp8_and_experts(kern, peak, 2.0 * peak, launch))  # dense FP8 = 2x dense bf16 (datasheets), as fit
    data["source"]["files"] = list(data["source"].get("files", [])) + list(rels)


def _h200_copy_and_gap() -> tuple[float, float]:
    """The H200 bench's copy bandwidth (GB/s) and kernel gap (us), medians of its ``hbm`` and ``launch`` rows (the
    profile's own values): the GPU the batched-GEMM and wave sweeps ran on."""
    meas = _read(H200_COMPUTE, ("hbm", "launch"))
    return (statistics.median(float(r["bandwidth_GBps"]) for r in meas.of("hbm")),
            statistics.median(float(r["overhead_us"]) for r in meas.of("launch")))


def _raw_rows(rel: str) -> list[dict]:
    return [json.loads(line) for line in (path(rel)).read_text().splitlines() if line.strip()]


def bmm_table(rel: str = H200_BMM) -> list[dict]:
    """``compute.bmm_table`` from the batched-GEMM rows of ``rel`` (``validation/probes/attention-bmm-by-shape/attention_bmm.py``), read as
    ``calibrate bench --kernels`` rows by :func:`clustersim.calibration.fit.kernels.bmm_table` (efficiency against the
    GPU's dense bf16 datasheet peak, the H200 bench's kernel gap taken off). Points below three times the file's
    shortest call are left out: that script times 20 back-to-back calls, and where the GPU finishes a call faster than
    the host issues the next (12.6-33 us per call over 5-200x the FLOPs at seq 512-1024) the time is the host's, not
    the kernel's (the bench proper queues its calls behind a sleep kernel and needs no such rule)."""
    from clustersim.calibration.fit import peak_tflops_for
    from clustersim.calibration.fit.kernels import bmm_table as fit_bmm

    rows = _raw_rows(rel)
    floor = min(r["us"] for r in rows)
    kern = [{"name": f"bmm_{r['kind']}", "batch_heads": r["bh"], "seq": r["s"], "head_dim": r["d"], "time_us": r["us"]}
            for r in rows if r["kind"] in ("score", "context", "context_t") and r["us"] >= 3 * floor]
    return fit_bmm(kern, peak_tflops_for(rows[0]["gpu"]), _h200_copy_and_gap()[1])


def wave_loss(rel: str = H200_WAVES) -> dict[str, float]:
    """``compute.wave_loss`` from the wave sweep ``rel`` (``validation/probes/gemm-partial-wave/wave_sweep.py``), read as ``calibrate
    bench --kernels`` rows by :func:`clustersim.calibration.fit.kernels.wave_loss` at the H200 bench's copy
    bandwidth."""
    from clustersim.calibration.fit import peak_tflops_for
    from clustersim.calibration.fit.kernels import wave_loss as fit_wave

    rows = [r for r in _raw_rows(rel) if r.get("kind") == "wave_gemm"]
    kern = [{"name": "wave_gemm", "layout": r["layout"], "m": r["m"], "n": r["n"], "k": r["k"], "sms": r["sms"],
             "time_us": r["us"]} for r in rows]
    return fit_wave(kern, peak_tflops_for(rows[0]["gpu"]), _h200_copy_and_gap()[0])


def overlap_table(rel: str) -> list[dict]:
    """``compute.overlap_table`` from the overlap probe's rows: one point per (kernel, collective),
    the slowdowns averaged over the ranks that measured it; the GEMM's work is its FLOPs, the
    memory-bound add's its minimum HBM traffic (``compute_work``: two reads and one write)."""
    from clustersim.calibration.jsonl import read_rows

    acc: dict[tuple, list[dict]] = {}
    for r in read_rows(path(rel)):
        if r.get("kind") == "overlap":
            acc.setdefault((r["compute"], r["collective"]), []).append(r)
    out = []
    for (kernel, _), rows in acc.items():
        n = len(rows)
        out.append({"kernel": "gemm" if kernel.startswith("gemm") else "memory",
                    "work": float(rows[0]["compute_work"]),
                    "collective": rows[0]["collective"].rsplit("_", 1)[0],
                    "collective_bytes": float(rows[0]["collective_bytes"]),
                    "compute_slowdown": round(sum(r["compute_slowdown"] for r in rows) / n, 4),
                    "comm_slowdown": round(sum(r["comm_slowdown"] for r in rows) / n, 4)})
    return out


def clock_window_ms(clock_table: list[dict], rel: str = CLOCK_IDLE) -> float:
    """``compute.clock_window_ms``: the window (25-500 ms in 25 ms steps) whose model -- each GEMM at the clock
    table's slowdown of its busy share in a window centred on it -- best gives the probe's duty-cycled GEMM times
    (least squares). Each measurement as the fraction of the way from the time at a 10 ms period (the averaged
    load) to the sustained full-load time, so the probe's GEMM and the table's need not share a scale."""
    from clustersim.calibration.jsonl import read_rows
    from clustersim.workload.compute import clock_slowdown

    rows = list(read_rows(path(rel)))
    full = next(r["mean_ms"] for r in rows if r["phase"] == "sustained")
    cyc = [r for r in rows if r["phase"] == "cycle"]
    base = {r["duty"]: r["mean_ms"] for r in cyc if r["period_ms"] == 10.0}
    pts = sorted((p["duty"], p["slowdown"]) for p in clock_table)

    def share(period: float, duty: float, window: float, x: float) -> float:
        lo, hi = x - window / 2, x + window / 2
        k0, k1 = int(lo // period) - 1, int(hi // period) + 1
        return sum(max(0.0, min(hi, k * period + duty * period) - max(lo, k * period)) for k in range(k0, k1 + 1)) / window

    def error(window: float) -> float:
        err = 0.0
        for r in cyc:
            d, per = r["duty"], r["period_ms"]
            if per < 10.0:
                continue
            xs = [(i + 0.5) / 100 * d * per for i in range(100)]
            s = sum(clock_slowdown(pts, share(per, d, window, x)) for x in xs) / len(xs)  # only GEMMs: load = share
            s0, s1 = clock_slowdown(pts, d), clock_slowdown(pts, 1.0)
            err += ((s - s0) / (s1 - s0) - (r["mean_ms"] - base[d]) / (full - base[d])) ** 2
        return err

    return min((25.0 * k for k in range(1, 21)), key=error)


#: one call's work of the residency probe's kernels: FLOPs of the GEMMs, bytes read and written of the 1 GiB copy
P2P_PROBE_WORK = {"gemm": ("gemm", 2.0 * 8192 ** 3), "gemm_8192x8192x2048": ("gemm", 2.0 * 8192 * 8192 * 2048),
                  "copy": ("memory", 2.0 * 2 ** 30)}


def p2p_wait_table(files=P2P_RESIDENT) -> list[dict]:
    """``compute.p2p_wait_table`` from the residency probe: per kernel and waiting side, the kernel's time beside
    the waiting kernel over its time alone in the same run (and repetition), averaged over the runs."""
    from clustersim.calibration.jsonl import read_rows

    ratios: dict[tuple, list[float]] = {}
    for rel in files:
        rows = list(read_rows(path(rel)))
        alone = {(r.get("rep"), r["kernel"]): r["ms"] for r in rows if r["phase"] == "alone"}
        for r in rows:
            if r["phase"] in ("recv_waiting", "send_waiting"):
                base = alone[(r.get("rep"), r["kernel"])]
                ratios.setdefault((r["kernel"], r["phase"].split("_")[0]), []).append(r["ms"] / base)
    return [{"kernel": P2P_PROBE_WORK[k][0], "work": P2P_PROBE_WORK[k][1], "side": side,
             "compute_slowdown": round(sum(v) / len(v), 4)} for (k, side), v in sorted(ratios.items())]


def make_h200() -> Profile:
    coll = _merge(*(_read(f) for f in H200_COLLECTIVES))
    comp = _read(H200_COMPUTE, COMPUTE_KINDS)
    # comp's meta row goes last: the graph runs' metadata wins where both say something
    meas = _merge(coll, comp)
    base = validate(Profile, copy.deepcopy(BASE_H200), file=None)
    prof = fit_profile(meas, name="hgx-h200", base=base, files=meas.files,
                       switches=nccl_switches("hgx-h200", base)).profile
    meta = _meta(coll)
    data = prof.model_dump(mode="json")
    data["links"] = copy.deepcopy(LINKS_PUBLISHED)       # published, not measured (see the module doc)
    data["nvls"] = False
    data["link_model"] = link_model_section(coll)
    _add_kernels(data, H200_KERNELS)
    _add_fp8_and_experts(data, (H200_FP8, H200_EXPERTS, H200_EXPERTS_LOOP))
    data["compute"]["bmm_table"] = bmm_table()
    data["compute"]["wave_loss"] = wave_loss()
    data["source"]["files"] = list(data["source"].get("files", [])) + [H200_BMM, H200_WAVES]
    data["compute"]["overlap_table"] = overlap_table(H200_OVERLAP)
    data["compute"]["p2p_wait_table"] = p2p_wait_table(P2P_RESIDENT_H200)
    data["compute"]["clock_window_ms"] = clock_window_ms(data["compute"]["clock_table"], CLOCK_IDLE_H200)
    # FSDP2 hook host time per shard-group size from the host probe on 2 and 4 ranks of one 4x H200 VM
    # (host speed differs between VMs: it is that VM's), with this profile's own kernel and call costs
    data["host"]["fsdp_hook_us"] = fsdp_hook_table(validate(Profile, data, file=None), H200_FSDP_PROBE)
    data["host"]["fsdp_optimizer_us"] = optimizer_host(OPTIMIZER_ROWS["H200"], "H200")
    # how far the host's own speed moved the host probe program's step over repeated runs (docs/validation.md 6n)
    data["host"]["speed_band"] = host_speed_band(validate(Profile, data, file=None), HOST_PROBE_RUNS["H200"], "H200",
                                                 HOST_PROBE_SUMMARIES["H200"])
    data["compute"]["device_spread"] = device_spread_h200()
    data["host"]["first_collective_us"] = first_collective_h200()
    data["source"]["files"] = list(data["source"].get("files", [])) + [H200_OVERLAP, H200_FSDP_PROBE, H200_PI_GPUS,
                                                                       H200_FIRST_COLLECTIVE, *P2P_RESIDENT_H200, CLOCK_IDLE_H200,
                                                                       *OPTIMIZER_ROWS["H200"]]
    data["source"]["files"] += [f for f in (*HOST_PROBE_RUNS["H200"], *HOST_PROBE_SUMMARIES["H200"])
                                if f not in data["source"]["files"]]
    src = data["source"]
    src.update({
        "gpu": meta.get("gpu"), "host": "vm (one VM, 2 resp. 4 H200 SXM GPUs, NV18 into NVSwitch)",
        "driver": meta.get("driver"), "nccl_version": meta.get("nccl_version"),
        "torch_version": meta.get("torch_version"), "date": str(meta.get("date", ""))[:10] or None,
        "nvls": bool(meta.get("nvls")), "measured": True,
        "notes": (
            "Measured (profiles/README.md): collectives (all six ops, 1 KiB-4 GiB, modes nccl = CUDA-graph "
            "replay without host launch, eager = back-to-back torch.distributed calls, framework = one isolated "
            "call) on 2 and 4 ranks; host framework call, per-call overhead, comm_init (2 and 4 ranks, "
            "extrapolated beyond); compute (bf16 GEMM table, D2D HBM copy, empty-kernel gap) from bench-run1 "
            "(whose collective rows are eager timings mislabelled nccl and are not used). "
            "compute.overlap_table: compute kernels alone vs beside 256 MiB NCCL collectives on 2 of 4 H200 of one VM "
            "(profiles/measurements/h200x4/overlap.jsonl, validation/probes/compute-beside-collectives/overlap_probe.py, 2026-11-26). "
            "compute.p2p_wait_table: compute kernels beside a posted NCCL receive / send waiting for its peer, "
            "on 2 H200 of one VM (validation/probes/p2p-waiting-kernel/h200x2, validation/probes/p2p-waiting-kernel/p2p_resident.py, 2026-11-27). "
            "compute.clock_window_ms: the power limiter's averaging window, from GEMMs cycled with idle time on one "
            "H200 (validation/probes/clock-idle-window/h200, validation/probes/clock-idle-window/clock_idle.py, 2026-11-27). "
            "host.fsdp_hook_us: from the FSDP2 host probe on 2 and 4 ranks of one 4x H200 VM "
            "(validation/host8-fsdp2-hook-h200_h200x4_2026-11-26/train_steps.jsonl, 2026-11-26; profiles/fsdp_hook.py --h200), per shard-group "
            "size: (step at 4 - step at 2 micro-batches) / 2, less the host time this profile's model charges per "
            "micro-batch without the hooks, per hook of step_fsdp.py's graph; host speed differs between VMs. "
            "host.fsdp_optimizer_us: AdamW's host window over FSDP2's shards in the FSDP2 rows of three 2x H200 VMs "
            "(validation/fsdp16-host-width_h200x2_2026-11-27, validation/blind15-memory_h100x2-h200x2_2026-11-27/h200, "
            "validation/hostcpu17-fsdp2-host_h100x2-h200x2_2026-11-27/h200; profiles/fsdp_hook.py --optimizer), base + per "
            "tensor through every rank's median window. "
            "compute.device_spread: relative standard deviation of the pi exercise's kernel time over 4 H200 run "
            "together (profiles/measurements/h200x4/pi-gpus.txt, 2 runs); host.first_collective_us: the first all-reduce of "
            "a fresh communicator behind a 0.5 s kernel, kernel end to all-reduce end, median per size "
            "(profiles/measurements/h200x4/first_collective.jsonl, 2026-11-26). "
            "Not measured: link classes and the NVLS default are published / NCCL-derived: " + LINK_SOURCES
            + f" Written by `{COMMAND}`."),
    })
    return validate(Profile, data, file=None)


def _rel_sd(values: list[float]) -> float:
    return statistics.stdev(values) / statistics.fmean(values)


def device_spread_h200() -> float:
    """``compute.device_spread`` of the H200: the relative standard deviation of the pi kernel's time over the
    4 GPUs run together (``together R gpuN samples blocks threads timed_s kernel_s pi`` rows), root mean square
    over the runs."""
    runs: dict[str, list[float]] = {}
    for line in path(H200_PI_GPUS).read_text().splitlines():
        f = line.split()
        if len(f) >= 8 and f[0] == "together":
            runs.setdefault(f[1], []).append(float(f[7]))
    return round(math.sqrt(statistics.fmean(_rel_sd(v) ** 2 for v in runs.values())), 6)


def first_collective_h200() -> dict[int, float]:
    """``host.first_collective_us`` of the H200: the median, per world size, of the time from the long kernel's
    end to the end of the process's first all-reduce on its own fresh communicator (variant ``default``)."""
    got: dict[int, list[float]] = {}
    for line in path(H200_FIRST_COLLECTIVE).read_text().splitlines():
        r = json.loads(line)
        if r["variant"] == "default" and r["world"] > 1:
            got.setdefault(int(r["world"]), []).append(1e6 * r["kernel_end_to_allreduce_end_s"])
    return {w: round(statistics.median(v), 1) for w, v in sorted(got.items())}


def pi_strong_h100() -> tuple[float, dict[int, float]]:
    """(``compute.device_spread``, ``host.first_collective_us``) of the H100 from the strong-scaling runs: the
    relative standard deviation of the kernel's time over the ranks of each multi-GPU run (root mean square over
    runs), and per world size the median over runs of (last all-reduce end - last kernel end)."""
    runs: dict[tuple[int, int], list[dict]] = {}
    for line in path(H100_PI_STRONG).read_text().splitlines():
        r = json.loads(line)
        if r["world"] > 1:
            runs.setdefault((r["world"], r["repeat"]), []).append(r)
    sds = [_rel_sd([r["kernel_s"] for r in rs]) for rs in runs.values()]
    first: dict[int, list[float]] = {}
    for (w, _), rs in runs.items():
        first.setdefault(w, []).append(1e6 * (max(r["allreduce_end_s"] for r in rs) - max(r["kernel_s"] for r in rs)))
    return (round(math.sqrt(statistics.fmean(x * x for x in sds)), 6),
            {w: round(statistics.median(v), 1) for w, v in sorted(first.items())})


def nccl_mode(meas: Measurements) -> Measurements:
    """Only the ``mode: nccl`` collective rows (and meta rows) of a bench: NCCL's own time per call, without
    the host. The eager / framework rows measure that VM's host, which the H100 profile keeps from its own
    probes (host speed differs between VMs), so they do not enter it."""
    meas.rows = [r for r in meas.rows if r["kind"] == "meta" or (r["kind"] == "collective" and r.get("mode") == "nccl")]
    return meas


def make_h100() -> Profile:
    comp = _read(H100_COMPUTE, COMPUTE_KINDS + ("comm_init",))
    coll = nccl_mode(_read(H100_COLLECTIVES))
    base = validate(Profile, copy.deepcopy(BASE_H100), file=None)
    # comp's meta row goes last: the compute run's metadata wins where both say something
    meas = _merge(coll, comp)
    prof = fit_profile(meas, name="dgx-h100", base=base, files=meas.files,
                       switches=nccl_switches("dgx-h100", base)).profile
    meta = _meta(comp)
    data = prof.model_dump(mode="json")
    data["links"] = copy.deepcopy(LINKS_PUBLISHED)
    data["nvls"] = True  # NCCL_NVLS_ENABLE defaults to on where NVSwitch multicast exists (env.rst)
    _add_kernels(data, H100_KERNELS)
    # no H100 batched-GEMM measurement: the H200's points carried over by roofline (same die and clocks; the HBM
    # bound at each GPU's datasheet bandwidth times this profile's measured copy fraction)
    from clustersim.calibration.transfer import bmm_between
    from clustersim.config.topology import gpu_spec
    h100 = gpu_spec("H100-SXM")
    data["compute"]["bmm_table"] = bmm_between(
        bmm_table(), source=gpu_spec("H200-SXM"), target=h100,
        hbm_fraction=data["compute"]["hbm_bandwidth_GBps"] / h100.hbm_bandwidth_GBps)
    # the same library on the same 132 SMs: the H200's measured fill below one wave
    data["compute"]["wave_loss"] = wave_loss()
    data["source"]["files"] = list(data["source"].get("files", [])) + [H200_BMM, H200_WAVES]
    data["compute"]["overlap_table"] = overlap_table(H100_OVERLAP)
    data["compute"]["p2p_wait_table"] = p2p_wait_table()
    data["compute"]["clock_window_ms"] = clock_window_ms(data["compute"]["clock_table"])
    data["link_model"] = link_model_section(coll, "dgx-h100")
    # FSDP2 hook host time from the host probe, run on an H100 VM (host speed differs between VMs:
    # this profile only); derived with this profile's own kernel and call costs
    data["host"]["fsdp_hook_us"] = fsdp_hook_us(validate(Profile, data, file=None), H100_FSDP_PROBE)
    data["host"]["fsdp_optimizer_us"] = optimizer_host(OPTIMIZER_ROWS["H100"], "H100")
    data["host"]["speed_band"] = host_speed_band(validate(Profile, data, file=None), HOST_PROBE_RUNS["H100"], "H100")
    data["compute"]["device_spread"], data["host"]["first_collective_us"] = pi_strong_h100()
    data["source"]["files"] = list(data["source"].get("files", [])) + [H100_OVERLAP, H100_FSDP_PROBE, H100_PI_STRONG,
                                                                       *P2P_RESIDENT, CLOCK_IDLE, *OPTIMIZER_ROWS["H100"]]
    data["source"]["files"] += [f for f in HOST_PROBE_RUNS["H100"] if f not in data["source"]["files"]]
    src = data["source"]
    src.update({
        "gpu": meta.get("gpu"), "host": "DGX H100 (links, NCCL); compute measured on a 1x H100 80GB HBM3 VM",
        "driver": meta.get("driver"), "nccl_version": BASE_H100["source"]["nccl_version"],
        "torch_version": meta.get("torch_version"), "date": str(meta.get("date", ""))[:10] or None,
        "nvls": True, "measured": True,
        "notes": (
            "Measured: the compute part (bf16 GEMM table, D2D HBM copy, empty-kernel gap) and a 1-rank comm_init "
            "(profiles/measurements/h100/bench.jsonl, one H100 80GB HBM3), the overlap table (compute kernels "
            "beside 256 MiB NCCL collectives, profiles/measurements/h100x2/overlap.jsonl, 2 H100 80GB HBM3 of one host, "
            "2026-11-26), the p2p wait table (compute kernels beside a posted NCCL receive / send waiting for its "
            "peer, validation/probes/p2p-waiting-kernel/h100x4, 2 of 4 H100 of two VMs, 2026-11-27), the clock window (GEMMs cycled "
            "with idle time, validation/probes/clock-idle-window/h100, one H100, 2026-11-27), and the collectives: the six NCCL ops, 1 KiB-4 GiB, CUDA-graph timed (mode nccl) on 2 "
            "H100 80GB HBM3 of one host, NV18 into NVSwitch, NCCL 2.28.9, NVLS off (profiles/measurements/h100x2/"
            "bench-graph.jsonl, 2026-11-27; predicted blind before: validation/collectives-h100-blind_h100x2-h100x4_2026-11-27/h100x2/predictions.json): "
            "their 2-rank entries and the link_model section fitted on them (the eager / framework rows of that "
            "bench are that VM's host and are not used). Link classes (other rank counts without the link model, "
            "NVLS) and the NVLS default are published / NCCL-derived: " + LINK_SOURCES
            + " NVLS on: NCCL_NVLS_ENABLE defaults to on where NVSwitch multicast exists (env.rst)."
            + " host.fsdp_hook_us: from the FSDP2 host probe (validation/host7-fsdp2-hook_h100x2_2026-11-26/train_steps.jsonl, 2 H100 80GB "
            "HBM3 of one VM, 2026-11-26; profiles/fsdp_hook.py): (step at 4 - step at 2 micro-batches) / 2, "
            "less the host time this profile's model charges per micro-batch without the hooks, per hook of "
            "step_fsdp.py's graph. Host speed differs between VMs: measured on that VM, not carried to other "
            "profiles. host.fsdp_optimizer_us: AdamW's host window over FSDP2's shards in the FSDP2 rows of three H100 "
            "VMs (validation/blind15-memory_h100x2-h200x2_2026-11-27 and its diag, "
            "validation/blind16-memory-4gpu_h100x4_2026-11-27, validation/hostcpu17-fsdp2-host_h100x2-h200x2_2026-11-27/h100; "
            "profiles/fsdp_hook.py --optimizer), base "
            "+ per tensor through every rank's median window. "
            "compute.device_spread and host.first_collective_us: from the pi exercise's timed section on "
            "1, 2 and 4 H100 of one host, 3 runs each (profiles/measurements/h100x4/pi-strong.jsonl, 2026-11-27): the "
            "relative standard deviation of the kernel time over the ranks of a run, and the last all-reduce's end "
            "after the last kernel's end, median per size."
            + f" Written by `{COMMAND}`."),
    })
    return validate(Profile, data, file=None)


#: profiles of GPUs without kernel measurements -> (target GPU in the catalogue, measured profile the
#: tables come from, its GPU). Source: the measured GPU whose HBM bandwidth is nearest (A100 2.0 TB/s
#: <- H100 3.35; B200, GB200, GB300 8 TB/s <- H200 4.8), or the same die (H100 96GB HBM2e <- H100 80GB).
TRANSFERRED = {
    "dgx-a100": ("A100-SXM-80GB", "dgx-h100", "H100-SXM"),
    "azure-ndv4": ("A100-SXM-40GB", "dgx-h100", "H100-SXM"),
    "cannon-4xa100": ("A100-SXM-40GB", "dgx-h100", "H100-SXM"),
    "dgx-b200": ("B200", "hgx-h200", "H200-SXM"),
    "gb200-nvl72": ("GB200", "hgx-h200", "H200-SXM"),
    "gb300-nvl72": ("GB300", "hgx-h200", "H200-SXM"),
    "grand-teton-h100": ("H100-SXM-96GB", "dgx-h100", "H100-SXM"),
}


def logo_table(measured: dict[str, Profile]) -> dict[str, dict[str, dict]]:
    """The transfer rule's leave-one-GPU-out table of the two measured Hopper profiles just fitted
    (``tools/transfer_logo.py``: H200 -> H100 and H100 -> H200, per kernel class)."""
    sys.path.insert(0, str(ROOT / "tools"))
    import transfer_logo

    return transfer_logo.hopper_pair({n: measured[n].compute.model_dump(mode="json", exclude_none=True)
                                      for n in transfer_logo.MEASURED})


def logo_inputs() -> list[str]:
    """The raw files :func:`logo_table` reads beyond the measured profiles (repository paths)."""
    import transfer_logo

    return [str(p.relative_to(ROOT)) for p in transfer_logo.BMM_ROWS.values()]


def transfer_info(src_name: str, source_gpu: str, logo: dict[str, dict[str, dict]]) -> dict:
    """``compute.transfer`` of a profile whose tables come from ``src_name``: the rule and its held-out error in
    the direction that starts at ``source_gpu`` (H200 -> H100 for tables taken from the H200)."""
    other = {"H200-SXM": "H100", "H100-SXM": "H200"}[source_gpu]
    direction = f"{source_gpu.split('-')[0]} -> {other}"
    import transfer_logo  # (tools/transfer_logo.py, on the path since logo_table)

    return {"from_profile": src_name,
            "rule": "roofline residual kept per point, both peaks at the boost clock; memory-bound classes: copy time "
                    "at the target's bandwidth, the rest at its SM issue rate; sustained clock by FLOP/s per watt of "
                    "board power, power as clock cubed (clustersim/calibration/transfer.py)",
            "logo_error": {c: round(v["mean"], 3) for c, v in logo[direction].items()},
            "logo_test": f"{direction} (both GPUs measured; same SM count, peak and clocks, 1.43x the HBM bandwidth: "
                         f"the peak and SM scaling of the rule is not tested by it), {transfer_logo.STUDY}"}


def transferred_compute(measured: Profile, source_gpu: str, target_gpu: str, logo: dict | None = None) -> dict:
    """The compute section of ``target_gpu``: ``measured``'s tables through
    :func:`clustersim.calibration.transfer.transfer_compute`, with its provenance and, given the ``logo`` table
    (:func:`logo_table`), its ``transfer`` record."""
    from clustersim.calibration.transfer import transfer_compute
    from clustersim.config.topology import gpu_spec

    comp = measured.compute.model_dump(mode="json", exclude_none=True)
    # the compute/NCCL overlap slowdown depends on the SM count and NCCL's channels on that GPU:
    # no roofline transfer of it, the target gets none
    comp.pop("overlap_table", None)
    # how much one GPU's speed varies among its kind is that silicon's and board's: not transferred
    comp.pop("device_spread", None)
    # the compute files only: collectives, overlap, host and pi probes feed no compute table
    files = [f for f in measured.source.files
             if f not in (H100_OVERLAP, H100_FSDP_PROBE, H200_OVERLAP, H200_FSDP_PROBE, H100_COLLECTIVES,
                          *H200_COLLECTIVES, H200_PI_GPUS, H200_FIRST_COLLECTIVE, H100_PI_STRONG)]
    out = transfer_compute(comp, source=gpu_spec(source_gpu), target=gpu_spec(target_gpu))
    out["provenance"] = (
        f"Not measured on this GPU. Kernel tables transferred from {measured.name} ({measured.source.gpu}, "
        f"measured {measured.source.date}; files {', '.join(files)}) to {target_gpu} by roofline "
        "(clustersim/calibration/transfer.py): each point's time split at the source's peak x wave "
        "quantisation and measured copy bandwidth, the unexplained share kept, rebuilt with the target's "
        "datasheet peak, HBM bandwidth and SM count; both peaks at the boost clock the kernels run at where both GPUs "
        "state their clocks (H100/H200 bursts at 1,980 MHz against a datasheet peak quoted at 1,830; A100 1,410 both); "
        "layout and attention tables read at the run's own shape "
        "through the target's roofline (roofline_lookup), the GEMMs' partial last wave at the library's measured "
        "share (wave_loss, a wave sweep on one H200); an eager attention core's batched GEMMs (bmm_table, measured "
        "on one H200) the same way; the square GEMM sweep's host issue time kept out of the scaling; memory-bound "
        "classes: their copy time at the target's copy bandwidth, their time beyond it at the target's SM issue rate; "
        "the sustained-clock table carried by the board "
        "power the target's tensor cores draw at their boost clock (none where it stays under the board power); "
        f"no compute/NCCL overlap table, no device spread. Written by `{COMMAND}`.")
    if logo is not None:
        out["transfer"] = transfer_info(measured.name, source_gpu, logo)
    return validate(Profile, {"name": "x", "compute": out}, file=None).compute.model_dump(mode="json",
                                                                                         exclude_none=True)


def without_section(text: str, key: str) -> list[str]:
    """The lines of a profile file's text without its top-level ``key:`` section (the key's line and
    every indented or comment line after it)."""
    out, skip = [], False
    for line in text.split("\n"):
        if line.startswith(f"{key}:"):
            skip = True
            continue
        if skip and line and not line.startswith((" ", "#", "- ")):   # "- ": a top-level list's items
            skip = False
        if not skip:
            out.append(line)
    return out


def with_link_model(text: str, section: dict) -> str:
    """A profile file's text with its top-level ``link_model:`` section replaced by ``section`` (or put
    right before ``compute:`` where it has none)."""
    head, tail = "\n".join(without_section(text, "link_model")).split("\ncompute:", 1)
    body = yaml.safe_dump({"link_model": section}, sort_keys=False, default_flow_style=None, width=120)
    return head + "\n" + body + "compute:" + tail


def a100_link_model(kernel_launch_us: float) -> dict:
    """The ``link_model`` section of the A100 profiles from the NDv4 logs (:data:`A100_COLLECTIVES`) at
    the ``azure-ndv4`` preset's line rates; the logs were timed back to back (old nccl-tests, no CUDA graphs), so
    each time less the profile's kernel gap, which the simulator adds to every call."""
    meas = _merge(*(_read(f) for f in A100_COLLECTIVES))
    return link_model_section(meas, "azure-ndv4", gap_us=kernel_launch_us, unmeasured_from="all_reduce",
                              note=A100_MACHINE)


def with_compute(text: str, compute: dict) -> str:
    """A profile file's text with its ``compute:`` section (the last one) replaced by ``compute``."""
    head = text.split("\ncompute:", 1)[0] + "\n"
    body = yaml.safe_dump({"compute": compute}, sort_keys=False, default_flow_style=None, width=120)
    return head + body


#: profiles written by hand (published link values, no measurements of their own)
HAND_WRITTEN = ("cannon-4xh100", "h100-pcie")
#: profiles whose collective entries are fitted from a bench of that hardware
MEASURED_COLLECTIVES = ("hgx-h200",)


def with_uncertainty(text: str, section: dict) -> str:
    """A profile file's text with its ``uncertainty:`` section (profiles/collective_band.py) replaced.

    The section goes last, after ``compute:``; :func:`with_compute` drops it and this puts it back.
    """
    out = without_section(text.rstrip("\n"), "uncertainty")
    body = yaml.safe_dump({"uncertainty": section}, sort_keys=False, width=120)
    return "\n".join(out) + "\n" + body


HEADERS = {
    "hgx-h200": [
        "# NVIDIA HGX H200 8-GPU default profile. GENERATED -- do not edit; regenerate with:",
        f"#   {COMMAND}",
        "# from profiles/measurements/h200x2/bench-graph.jsonl, profiles/measurements/h200x4/bench-graph.jsonl (collectives, host)",
        "# and profiles/measurements/h200x2/bench-run1.jsonl (gemm, hbm, launch rows only). Link classes: published.",
        "# Kernel-class tables: profiles/measurements/h200/kernels.jsonl (kernel rows).",
        "# overlap_table: profiles/measurements/h200x4/overlap.jsonl (2 of 4 H200, compute beside NCCL collectives);",
        "# host.fsdp_hook_us: validation/host8-fsdp2-hook-h200_h200x4_2026-11-26/train_steps.jsonl (FSDP2 host probe, 2 and 4 ranks of a 4x H200 VM).",
    ],
    "dgx-h100": [
        "# NVIDIA DGX H100 8-GPU default profile. GENERATED -- do not edit; regenerate with:",
        f"#   {COMMAND}",
        "# link classes / NVLS: published NCCL values (no multi-GPU H100 measured);",
        "# compute: fitted from profiles/measurements/h100/bench.jsonl (1x H100 80GB HBM3);",
        "# kernel-class tables: profiles/measurements/h100/kernels-20261124.jsonl (kernel rows);",
        "# overlap_table: profiles/measurements/h100x2/overlap.jsonl (2x H100, compute beside NCCL collectives);",
        "# host.fsdp_hook_us: validation/host7-fsdp2-hook_h100x2_2026-11-26/train_steps.jsonl (FSDP2 host probe, 2x H100 VM; fsdp_hook.py);",
        "# collectives: the 2-rank one-host all_reduce/reduce_scatter/all_gather entries of hgx-h200 (same NVLink4).",
    ],
}


def render(profile: Profile) -> str:
    text = profile_yaml(profile, command=COMMAND, date=profile.source.date or "unknown")
    body = text.split("\n", 1)[1]  # drop the generic first header line
    body = "\n".join(line for line in body.splitlines() if not line.startswith("# made:")) + "\n"
    out = "\n".join(HEADERS[profile.name]) + "\n" + body
    validate(Profile, yaml.safe_load(out), file=profile.name)
    return out


OPS6 = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send_recv")


def bar_table(holdout: str = "odd") -> str:
    """Issue 5's Bar on the bench's NCCL-level rows: fit on half of the sizes, predict the other half.

    Per rank count and op, the same fit as the profile (:func:`nccl_switches` included), Markdown table.
    """
    from clustersim.calibration.report import bar_check, evaluate

    base = validate(Profile, copy.deepcopy(BASE_H200), file=None)
    sw = nccl_switches("hgx-h200", base)
    lines = ["| ranks | op | mean \\|err\\| < 1 MiB | mean \\|err\\| >= 1 MiB | max \\|err\\| >= 1 MiB | Bar |",
             "|---|---|---|---|---|---|"]
    for rel in H200_COLLECTIVES:
        meas = _read(rel)
        for op in OPS6:
            sub = Measurements(rows=[r for r in meas.rows if r["kind"] == "meta" or (
                r["kind"] == "collective" and r["op"] == op and r.get("mode") == "nccl")], files=meas.files)
            fit = fit_profile(sub, name="bar", holdout=holdout, switches=sw).profile
            rep = evaluate(sub.rows, fit, holdout=holdout)
            s = rep.summary[0]
            ranks = fit.collectives[0].ranks
            verdict = "meets" if not bar_check(rep) else "misses"
            lines.append(f"| {ranks} | {op} | {s['mean_abs_err_small_pct']:.1f}% | "
                         f"{s['mean_abs_err_large_pct']:.1f}% | {s['max_abs_err_large_pct']:.1f}% | {verdict} |")
    return "\n".join(lines)


INPUTS = PROFILES / "inputs.yaml"


def _band(name: str) -> str:
    """The uncertainty band (profiles/inputs.yaml ``bands``) profile ``name`` gets."""
    if name in MEASURED_COLLECTIVES:
        return "measured"
    if name == "dgx-h100":       # its collectives measured on 2 GPUs only (profiles/measurements/h100x2)
        return "measured-2-ranks"
    return "a100-link-model" if name in A100_LINK_MODEL else "published"


def inputs_problems(recorded: dict[str, list[str]] | None = None, inputs: Path = INPUTS) -> list[str]:
    """What ``profiles/inputs.yaml`` gets wrong: a listed file that is missing, a group without its facts, a shipped
    profile without an entry or with another band than the recipe gives it; with ``recorded`` (:func:`recipe_base.reads`
    of a full run) also every file the recipe read for a profile or band and the file does not list, and every file it
    lists that the recipe did not read."""
    doc = yaml.safe_load(inputs.read_text(encoding="utf-8"))
    out: list[str] = []
    profiles, bands = doc.get("profiles") or {}, doc.get("bands") or {}

    def band_files(b: str) -> set[str]:
        entry = bands.get(b) or {}
        return set(band_files(entry["same_as"]) if "same_as" in entry else entry.get("files") or [])

    listed: dict[str, set[str]] = {}
    for name, groups in profiles.items():
        if not (PROFILES / f"{name}.yaml").is_file():
            out.append(f"{name}: no shipped profile of that name")
        files: set[str] = set()
        for i, g in enumerate(groups):
            where = f"{name}[{i}] ({', '.join(g.get('fields') or ['?'])})"
            kinds = [k for k in ("files", "from", "band", "published", "assumed") if k in g]
            if not g.get("fields") or len(kinds) != 1:
                out.append(f"{where}: needs fields and exactly one of files, from, band, published, assumed")
                continue
            if "files" in g:
                out += [f"{where}: no {k}" for k in ("machine", "date", "command") if not g.get(k)]
                files |= set(g["files"])
            elif "from" in g and g["from"] not in profiles:
                out.append(f"{where}: from {g['from']}, which has no entry")
            elif "band" in g:
                if g["band"] not in bands:
                    out.append(f"{where}: band {g['band']} is not in bands")
                elif g["band"] != _band(name):
                    out.append(f"{where}: band {g['band']}, the recipe gives {_band(name)}")
        listed[name] = files
    for b, entry in bands.items():
        if "same_as" not in entry:
            out += [f"bands.{b}: no {k}" for k in ("files", "machine", "date", "command") if not entry.get(k)]
        listed[f"band:{b}"] = band_files(b)
    for rel in sorted(set().union(*listed.values())):
        if not (ROOT / rel).is_file():
            out.append(f"{rel}: listed but missing")
    out += [f"{p.stem}: shipped but not in {inputs.name}" for p in sorted(PROFILES.glob("*.yaml"))
            if p.name != inputs.name and p.stem not in profiles]
    for key, files in (recorded or {}).items():
        got = listed.get(key, set())
        out += [f"{key}: read {rel}, not listed" for rel in files if rel not in got]
        out += [f"{key}: lists {rel}, not read" for rel in sorted(got - set(files))]
    return out


#: Largest relative difference between a shipped fitted number and a fresh fit that ``--check`` accepts.
#: The least-squares fits land on slightly different minima with the numpy/scipy build and CPU
#: (on 18e3fcd's inputs: 20 link-model numbers of hgx-h200 / azure-ndv4 moved by 0.01-0.25%, e.g.
#: azure-ndv4's local_GBps 123.2 -> 123.5); anything past 0.5% is a change of the recipe or its inputs.
FIT_RTOL = 5e-3


def fit_difference(shipped: str | None, fresh: str) -> tuple[str | None, float]:
    """Where two profile texts differ most: ``(None, 0.0)`` when identical, else the first key path
    whose structure or text differs (relative difference ``inf``), or the number that moved most.

    >>> fit_difference("a: {b: 2.0, c: x}", "a: {b: 1.0, c: x}")
    ('a.b', 0.5)
    >>> fit_difference("a: 1", "b: 1")[1]
    inf
    """
    if shipped == fresh:
        return None, 0.0
    if shipped is None:
        return "the file is missing", float("inf")
    worst: list = [None, 0.0]

    def walk(a, b, key: str) -> None:
        if isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
            for k in a:
                walk(a[k], b[k], f"{key}.{k}" if key else str(k))
        elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            for i, (x, y) in enumerate(zip(a, b)):
                walk(x, y, f"{key}[{i}]")
        elif (isinstance(a, (int, float)) and isinstance(b, (int, float))
              and not isinstance(a, bool) and not isinstance(b, bool)):
            rel = abs(a - b) / max(abs(a), abs(b)) if a != b else 0.0
            if rel > worst[1]:
                worst[:] = [key, round(rel, 12)]
        elif a != b:
            worst[:] = [key or "the document", float("inf")]
            raise StopIteration
    try:
        walk(yaml.safe_load(shipped), yaml.safe_load(fresh), "")
    except StopIteration:
        pass
    return (worst[0] or "comments or formatting", worst[1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="compare with the shipped files instead of writing")
    ap.add_argument("--bar", choices=("odd", "even"), help="print issue 5's Bar table (held-out sizes) and exit")
    ap.add_argument("--out", default=str(PROFILES), help="output folder (default profiles)")
    args = ap.parse_args(argv)
    if args.bar:
        print(bar_table(args.bar))
        return 0
    rc = 0
    with reading_for("hgx-h200"):
        h200 = make_h200()
    with reading_for("dgx-h100"):
        h100 = make_h100()
    measured = {p.name: p for p in (h200, h100)}
    logo = logo_table(measured)
    outputs = [(p.name, render(p)) for p in measured.values()]
    for name, (target, src_name, src_gpu) in TRANSFERRED.items():
        # published link / NCCL values stay as written by hand; only the compute section is generated
        shipped = (PROFILES / f"{name}.yaml").read_text(encoding="utf-8")
        compute = transferred_compute(measured[src_name], src_gpu, target, logo)
        with reading_for(name):  # the LOGO error it carries was computed from both GPUs' batched-GEMM rows too
            for rel in logo_inputs():
                recipe_base.path(rel)  # (main's own `path` is a local further down)
        text = with_compute(shipped, compute)
        if name in A100_LINK_MODEL:
            with reading_for(name):
                text = with_link_model(text, a100_link_model(float(compute["kernel_launch_us"])))
        validate(Profile, yaml.safe_load(text), file=name)
        outputs.append((name, text))
    for name in HAND_WRITTEN:   # links and compute by hand; only the uncertainty section is generated
        outputs.append((name, (PROFILES / f"{name}.yaml").read_text(encoding="utf-8")))
    from collective_band import uncertainty_sections

    # dgx-a100's band is its link model's error on the held-out 32-GPU log: of the profile written now
    a100 = dict(outputs)["azure-ndv4"]
    bands = uncertainty_sections(validate(Profile, yaml.safe_load(a100), file="azure-ndv4"))
    outputs = [(name, with_uncertainty(text, bands[_band(name)])) for name, text in outputs]
    from provenance_recipe import provenance_section, with_provenance

    # every entry says how it is known (clustersim/config/provenance.py); a field inputs.yaml misses fails here
    try:
        outputs = [(name, with_provenance(text, provenance_section(name, yaml.safe_load(text),
                                                                   bands["published"]["time_factor"])))
                   for name, text in outputs]
    except ValueError as exc:
        print(f"{INPUTS.relative_to(ROOT)}: {exc}")
        return 1
    for name, text in outputs:
        validate(Profile, yaml.safe_load(text), file=name)
        path = Path(args.out) / f"{name}.yaml"
        if args.check:
            shipped = path.read_text(encoding="utf-8") if path.is_file() else None
            where, rel = fit_difference(shipped, text)
            same = where is None or rel <= FIT_RTOL
            verdict = ("up to date" if where is None else
                       f"up to date within the fit's last digits ({rel:.2%} at {where})" if same else
                       f"DIFFERS ({where}" + (f": {rel:.2%})" if rel < float("inf") else ")"))
            print(f"{path}: {verdict}")
            rc |= 0 if same else 1
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path}")
    # "measured-2-ranks" is computed from the published band's errors: its reads are that band's
    recorded = reads()
    recorded["band:measured-2-ranks"] = recorded.get("band:published", [])
    problems = inputs_problems(recorded)
    for msg in problems:
        print(f"{INPUTS.relative_to(ROOT)}: {msg}")
    print(f"{INPUTS.relative_to(ROOT)}: {'DIFFERS' if problems else 'up to date'} (every file read, per profile)")
    return rc | (1 if problems else 0)


if __name__ == "__main__":
    sys.exit(main())
