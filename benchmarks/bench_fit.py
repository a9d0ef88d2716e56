"""Speed of the joint link-model fit (issue 13: fitting 10,000 rows in at most 10 s).

    python benchmarks/bench_fit.py [--rows 10000] [--seed 0]

Synthesises ``--rows`` collective rows from a link model with known parameters away from
NCCL's constants (six ops, 2-1,024 ranks on 8-GPU nodes with 8 NICs, 1 KiB-4 GiB, 3%
log-normal noise from a seeded generator), fits :func:`clustersim.calibration.fit.fit_link_model`
to them and prints the wall-clock and CPU time, the median fit residual and the error of the
recovered model at the true parameters. Timings are of whatever machine runs this; nothing
asserts them.
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np

from clustersim.calibration.fit.linkmodel import LinkModel, fit_link_model

OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all", "send_recv")
LINES = {"intra_line_GBps": 450.0, "net_line_GBps": 50.0, "nics_per_node": 8}


def synthetic_rows(count: int, seed: int) -> tuple[list[dict], LinkModel]:
    """``count`` rows drawn from a known model with seeded noise, and that model."""
    rng = np.random.default_rng(seed)
    # parameters away from NCCL's constants (the fit's starting point): latencies 1.2-1.7x, efficiencies
    # 0.75-1.1x, own-chunk rates 0.5-0.8x of their starting values, so the fit has to travel
    truth = LinkModel(ops=OPS, floor_us=np.array([9.0, 8.0, 8.0, 7.0, 10.0, 10.0]),
                      op_eff=np.array([1.0, 1.0, 1.0, 1.0, 0.9, 0.95]), base_us=np.array([9.0, 20.0, 12.0]),
                      lat_intra_us=np.array([0.9, 2.5, 4.5]), lat_inter_us=np.array([4.0, 6.0, 17.0]),
                      eff_intra=np.array([0.3, 0.65, 0.85]), eff_inter=np.array([0.3, 0.6, 0.7]),
                      local_GBps=np.array([1200.0, 1500.0, 1000.0, 2000.0, 1600.0, 2000.0]), **LINES)
    ranks = 2 ** rng.integers(1, 11, count)
    sizes = 2.0 ** rng.integers(10, 33, count)
    ops = rng.choice(OPS, count)
    rows = [{"op": str(o), "ranks": int(n), "nodes": max(1, int(n) // 8), "size_bytes": float(s), "time_us": 0.0}
            for o, n, s in zip(ops, ranks, sizes)]
    t = truth.predict_us(rows) * np.exp(rng.normal(0.0, 0.03, count))
    for r, v in zip(rows, t):
        r["time_us"] = float(v)
    return rows, truth


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    rows, truth = synthetic_rows(a.rows, a.seed)
    t0, c0 = time.perf_counter(), time.process_time()
    model = fit_link_model(rows, **LINES)
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    err = np.abs(model.predict_us(rows) / truth.predict_us(rows) - 1)
    print(f"{platform.node()} python {platform.python_version()}")
    print(f"fit of {a.rows} rows: {dt:.2f} s wall-clock ({cpu:.2f} s CPU); median |residual| {np.median(np.abs(np.expm1(model.residuals))):.2%}; "
          f"recovered vs true model: mean {err.mean():.2%}, worst {err.max():.2%}")


if __name__ == "__main__":
    main()
