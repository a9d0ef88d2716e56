"""Goodput and the best checkpoint interval against cluster size, 1,000 to 100,000 GPUs.

Failure rate: the per-GPU MTBF implied by Llama 3 (Dubey et al. 2024, §3.3.4, copied from
published-runs.md §4): 419 unexpected interruptions in a 54-day snapshot on 16,384 GPUs, so
M_gpu = 16,384 x 54 x 24 / 419 = 50,673 GPU-hours (all causes charged to GPUs). Checkpoint: a
Llama-3-405B model state (405e9 params x 14 bytes: bf16 weights + fp32 master, m, v, from
clustersim.reliability.checkpoint) written at 2 TB/s (the Tectonic bandwidth Llama 3 reports) and,
for contrast, at 200 GB/s. Restart + re-queue: 10 minutes. Run: 54 days of training work.

    python tools/goodput_scaling.py [--png docs/img/goodput_scaling.png] [--trials 400]

Prints a Markdown table (closed form and the Monte-Carlo check) and writes the PNG.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from clustersim.reliability import goodput as gp

LLAMA3_GPUS, LLAMA3_DAYS, LLAMA3_UNEXPECTED = 16384, 54, 419
MTBF_GPU_HOURS = LLAMA3_GPUS * LLAMA3_DAYS * 24 / LLAMA3_UNEXPECTED
CKPT_BYTES = 405e9 * 14
RESTART_S = 600.0
WORK_S = 54 * gp.DAY


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--png", default="docs/img/goodput_scaling.png")
    ap.add_argument("--trials", type=int, default=400)
    args = ap.parse_args()
    sizes = np.array([1000, 2000, 4096, 8192, 16384, 32768, 65536, 100000])
    t0 = time.perf_counter()
    rows = {}
    print(f"per-GPU MTBF {MTBF_GPU_HOURS:,.0f} h; checkpoint {CKPT_BYTES / 1e12:.2f} TB; restart {RESTART_S / 60:g} min; "
          f"{WORK_S / gp.DAY:g} days of work\n")
    print("| write | GPUs | system MTBF (h) | failures | best interval (min) | Young (min) | goodput | MC goodput [99 % CI] |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for bw in (2e12, 2e11):
        out = []
        for n in sizes:
            d = gp.goodput_report(work_s=WORK_S, n_gpus=int(n), n_nodes=0, checkpoint_bytes=CKPT_BYTES, write_Bps=bw,
                                  restart_s=RESTART_S, mtbf_gpu_hours=MTBF_GPU_HOURS, mtbf_node_hours=None,
                                  trials=args.trials, seed=int(n))
            mc = d["monte_carlo"]
            print(f"| {bw / 1e9:g} GB/s | {n:,} | {d['system_mtbf_s'] / 3600:.2f} | {d['expected_failures']:.0f} | "
                  f"{d['intervals_s']['best'] / 60:.2f} | {d['intervals_s']['young'] / 60:.2f} | "
                  f"{100 * d['goodput']['best']:.2f} % | {100 * mc['goodput']:.2f} % [{100 * mc['ci_low']:.2f}, "
                  f"{100 * mc['ci_high']:.2f}]{'' if mc['agrees'] else ' DISAGREES'} |")
            out.append((d["goodput"]["best"], d["intervals_s"]["best"], mc["ci_low"], mc["ci_high"]))
        rows[bw] = np.array(out)
    print(f"\n({time.perf_counter() - t0:.1f} s)")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    for bw, r in rows.items():
        lab = f"checkpoint write {bw / 1e9:g} GB/s"
        a1.plot(sizes, 100 * r[:, 0], marker="o", label=lab)
        a1.fill_between(sizes, 100 * r[:, 2], 100 * r[:, 3], alpha=0.3)
        a2.plot(sizes, r[:, 1] / 60, marker="o", label=lab)
    a1.axvline(LLAMA3_GPUS, color="gray", ls=":", lw=1)
    a1.annotate("Llama 3: >90 %\neffective time", (LLAMA3_GPUS, 90), fontsize=8, ha="left")
    a1.scatter([LLAMA3_GPUS], [90], color="gray", marker="_", s=200)
    for a in (a1, a2):
        a.set_xscale("log")
        a.set_xlabel("GPUs")
        a.grid(alpha=0.3)
    a1.set_ylabel("expected goodput (%)")
    a2.set_ylabel("best checkpoint interval (min)")
    a2.set_yscale("log")
    from matplotlib.ticker import FormatStrFormatter

    a2.yaxis.set_major_formatter(FormatStrFormatter("%g"))
    a2.yaxis.set_minor_formatter(FormatStrFormatter("%g"))
    a1.legend(fontsize=8)
    a1.set_title("goodput (band: Monte-Carlo 99 % CI)", fontsize=9)
    a2.set_title(f"per-GPU MTBF {MTBF_GPU_HOURS:,.0f} h, restart {RESTART_S / 60:g} min, 405B state", fontsize=9)
    fig.tight_layout()
    fig.savefig(args.png, dpi=110)
    print(f"wrote {args.png}")


if __name__ == "__main__":
    main()
