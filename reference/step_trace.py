#!/usr/bin/env python3
"""Where one training step of the reference program spends its time and memory (diagnostic, GPU only).

    torchrun --nproc-per-node 2 reference/step_trace.py SCENARIO.yaml [--set k=v]... --run-id ID -o trace.jsonl

Builds and wraps the scenario's model exactly as ``reference/train_gpt.py`` does (same functions,
same data), runs ``--warmup`` steps, then

* one step under ``torch.profiler`` (CPU and CUDA activities); rank 0 reduces the trace to one
  JSON line: the step's wall time; host time inside every ``FSDP::*`` / ``DDP`` annotation and in
  the blocking CUDA runtime calls (stream/event/device synchronise, cudaMalloc/cudaFree); GPU busy
  time per stream and over all streams; NCCL kernel time; and the idle time of the compute stream
  split by cause: *host late* (the next kernel was launched after the previous one ended: the
  GPU waited for Python) or *stream wait* (it was launched in time but waited for another stream,
  e.g. an all-gather);
* one more step, unprofiled, in which the allocator's peak is read after every micro-batch's
  forward and backward and after the optimizer (``torch.cuda.max_memory_allocated``, reset before
  each phase; host-side counters, no synchronisation), to show which phase holds the step's peak.

Nothing here feeds a profile: it names causes, the simulator's parameters come from probes.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import train_gpt  # noqa: E402
from clustersim.config.base import load_model  # noqa: E402
from clustersim.config.scenario import Scenario  # noqa: E402

#: CUDA runtime calls that block the host until the GPU (or a stream of it) has caught up
BLOCKING = ("cudaStreamSynchronize", "cudaEventSynchronize", "cudaDeviceSynchronize", "cudaMalloc", "cudaFree",
            "cudaMemcpy", "cudaStreamWaitEvent", "cudaHostAlloc", "cudaFreeHost")
#: a gap shorter than this (us) between two kernels of one stream is the launch pipeline, not idle
GAP_US = 5.0


def _union(intervals):
    total, end = 0.0, -1e30
    for s, e in sorted(intervals):
        if e <= end:
            continue
        total += e - max(s, end)
        end = e
    return total


def summarise(trace: dict) -> dict:
    """Reduce a Chrome trace of one step to host/GPU totals (microseconds)."""
    ev = [e for e in trace.get("traceEvents", []) if e.get("ph") == "X"]
    kernels = [e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    runtime = [e for e in ev if e.get("cat") == "cuda_runtime"]
    annot = [e for e in ev if e.get("cat") == "user_annotation"]
    launch_ts = {e["args"].get("correlation"): e["ts"] for e in runtime if "correlation" in e.get("args", {})}
    out: dict = {}
    if kernels:
        t0 = min(e["ts"] for e in kernels)
        t1 = max(e["ts"] + e["dur"] for e in kernels)
        out["gpu_span_us"] = t1 - t0
        out["gpu_busy_any_stream_us"] = _union([(e["ts"], e["ts"] + e["dur"]) for e in kernels])
        nccl = [e for e in kernels if "nccl" in e["name"].lower()]
        out["nccl_kernel_us"] = sum(e["dur"] for e in nccl)
        out["nccl_kernels"] = len(nccl)
        by_stream: dict = {}
        for e in kernels:
            by_stream.setdefault(e["args"].get("stream"), []).append(e)
        streams = {}
        for sid, ks in by_stream.items():
            ks.sort(key=lambda e: e["ts"])
            busy = _union([(e["ts"], e["ts"] + e["dur"]) for e in ks])
            late = wait = 0.0
            n_late = n_wait = 0
            for a, b in zip(ks, ks[1:]):
                gap = b["ts"] - (a["ts"] + a["dur"])
                if gap <= GAP_US:
                    continue
                lt = launch_ts.get(b["args"].get("correlation"))
                if lt is not None and lt > a["ts"] + a["dur"] - GAP_US:
                    # launched after the previous kernel ended: the GPU waited for the host (the part
                    # of the gap after the launch, if any, is the launch latency)
                    late += gap
                    n_late += 1
                else:
                    wait += gap
                    n_wait += 1
            streams[str(sid)] = {"kernels": len(ks), "busy_us": busy,
                                 "nccl": sum(1 for e in ks if "nccl" in e["name"].lower()),
                                 "idle_host_late_us": late, "idle_host_late_gaps": n_late,
                                 "idle_stream_wait_us": wait, "idle_stream_wait_gaps": n_wait}
        out["streams"] = streams
    host: dict = {}
    for e in annot:
        name = e["name"]
        if name.startswith("FSDP") or "DDP" in name or name.startswith("ProfilerStep") or name.startswith("step:"):
            h = host.setdefault(name, {"count": 0, "us": 0.0})
            h["count"] += 1
            h["us"] += e["dur"]
    out["annotations"] = host
    rt: dict = {}
    for e in runtime:
        if e["name"] in BLOCKING or e["name"].startswith("cudaLaunch"):
            r = rt.setdefault(e["name"], {"count": 0, "us": 0.0})
            r["count"] += 1
            r["us"] += e["dur"]
    out["runtime"] = rt
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenario")
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--warmup", type=int, default=4)
    ap.add_argument("--run-id", default=None)
    ap.add_argument("--trace-dir", default=None, help="also keep rank 0's Chrome trace (gzip) here")
    ap.add_argument("--kernels-dir", default=None, help="keep every rank's GPU kernels (stream, start, duration, "
                    "name) of the profiled step here, one gzip JSON list per rank")
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args(argv)
    args.steps, args.device, args.force_ddp, args.dist_timeout = 2, None, False, 300

    import torch
    import torch.distributed as dist
    from torch.profiler import ProfilerActivity, profile, record_function

    sc = load_model(Scenario, args.scenario, args.set)
    dtype_name = train_gpt.check_supported(sc)
    launch = train_gpt.start(args, sc, dtype_name)
    loss_fn = train_gpt.make_loss(sc, launch)
    model, _ = train_gpt.build_model(sc, launch, getattr(torch, dtype_name))
    parallel = train_gpt.wrap_parallel(sc, args, launch, model, loss_fn)
    del model
    params = train_gpt.optimizer_params(parallel.params_modules)
    opt = train_gpt.make_optimizer(sc.training, params)
    data = train_gpt.synthetic_batches(sc, args, launch)
    trainer = train_gpt.Trainer(sc, launch, parallel, opt, params, data, loss_fn)
    for i in range(args.warmup):
        trainer.step(i)
    launch.sync()
    if launch.distributed:
        dist.barrier()
    launch.sync()

    # 1. one profiled step
    cuda = launch.device_kind == "cuda"
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=acts) as prof:
        t = time.perf_counter()
        with record_function("step:profiled"):
            trainer.step(args.warmup)
            t_issue = time.perf_counter()
        launch.sync()
        wall = time.perf_counter() - t
    row = {"run_id": args.run_id, "scenario": args.scenario, "overrides": args.set, "rank": launch.rank,
           "profiled_step_ms": wall * 1e3, "host_issue_ms": (t_issue - t) * 1e3,
           "gpu": torch.cuda.get_device_name(launch.device) if cuda else "cpu", "torch": torch.__version__}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            trace = json.load(f)
        if args.trace_dir and launch.rank == 0:
            Path(args.trace_dir).mkdir(parents=True, exist_ok=True)
            with gzip.open(Path(args.trace_dir) / f"{args.run_id}.json.gz", "wt") as g:
                json.dump(trace, g)
        if args.kernels_dir:  # every rank: its device kernels only (a few hundred kB against tens of MB)
            Path(args.kernels_dir).mkdir(parents=True, exist_ok=True)
            kernels = [[e.get("tid"), e["ts"], e.get("dur", 0), str(e.get("name", ""))[:80]]
                       for e in trace.get("traceEvents", []) if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
            with gzip.open(Path(args.kernels_dir) / f"{args.run_id}-rank{launch.rank}.json.gz", "wt") as g:
                json.dump(kernels, g)
    row.update(summarise(trace))

    # 2. one unprofiled step with the allocator's peak per phase (gradient accumulation runs only)
    phases = []
    dev = launch.device
    if parallel.schedule is None and cuda:
        launch.sync()
        ddp, n_mb = parallel.ddp, trainer.n_mb
        opt.zero_grad(set_to_none=True)
        batch = data[args.warmup + 1]
        for j in range(n_mb):
            x, y = batch[j, :, :-1], batch[j, :, 1:]
            ctx = ddp.no_sync() if (ddp is not None and j < n_mb - 1) else nullcontext()
            with ctx:
                torch.cuda.reset_peak_memory_stats(dev)
                loss = trainer.loss_fn(parallel.train_module(x), y) / n_mb
                phases.append({"phase": f"mb{j}.forward", "peak": torch.cuda.max_memory_allocated(dev),
                               "after": torch.cuda.memory_allocated(dev)})
                torch.cuda.reset_peak_memory_stats(dev)
                loss.backward()
                phases.append({"phase": f"mb{j}.backward", "peak": torch.cuda.max_memory_allocated(dev),
                               "after": torch.cuda.memory_allocated(dev)})
        torch.cuda.reset_peak_memory_stats(dev)
        opt.step()
        phases.append({"phase": "optimizer", "peak": torch.cuda.max_memory_allocated(dev),
                       "after": torch.cuda.memory_allocated(dev)})
        launch.sync()
    row["memory_phases_GiB"] = [{**p, "peak": round(p["peak"] / 2**30, 3), "after": round(p["after"] / 2**30, 3)}
                                for p in phases]
    rows = [row]
    if launch.distributed:
        rows = [None] * dist.get_world_size()
        dist.all_gather_object(rows, row)
    if launch.rank == 0:
        with open(args.output, "a") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
        r = rows[0]
        print(f"[step_trace] {args.run_id}: step {r['profiled_step_ms']:.1f} ms (profiled), host issue "
              f"{r['host_issue_ms']:.1f} ms, GPU busy {r.get('gpu_busy_any_stream_us', 0) / 1e3:.1f} ms",
              file=sys.stderr)
    if launch.distributed:
        dist.barrier()
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
