"""Every transfer check of the link-model fitter at once, in about two seconds (issue 13).

    python tools/transfer_checks.py [--residuals] [--a100-sizes]

Prints, from the same real logs and with the same calls as ``tests/integration/test_fit_transfer.py``
(and the H100 2 -> 4 check of ``tests/integration/test_h100_collectives_transfer.py``): the 2x H200
size check (both halves: fit residual median, per op the mean error at >= 1 MiB / below / worst,
percent), the A100 size check (both halves), the worst held-out point, the A100 8 + 16 -> 32 GPU
scale check, the H200 and H100 2 -> 4 rank scale checks, the blind H200 2 -> 3 rank check, the H200 band factor and the synthetic
recovery check. Thresholds are printed next to the numbers; nothing is asserted (the test file
does that). Use it to judge a change to the link model before running the slower test file.

``--residuals``: also the link model's residual at every fit point of the 2x H200 size check
(the check whose median must be <= 3%), with the cell that ran; ``--a100-sizes``: the 32-GPU
prediction against the log at every size, next to the 8- and 16-GPU fit rows.

>>> callable(main)
True
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

import numpy as np

from clustersim.calibration.fit import read_measurements
from clustersim.calibration.fit.linkmodel import LinkModel, fit_link_model
from clustersim.calibration.fit.transfer import band_factor, scale_check, size_check, split_sizes
from clustersim.collectives.linkmodel import _split
from clustersim.collectives.ncclchoice import ALGOS, PROTOS

ROOT = Path(__file__).resolve().parents[1]
MEAS = ROOT / "profiles" / "measurements"
#: the benches: the profile inputs, the 2- and 4-rank H100 benches (the 4-rank one held out of every profile), the 3-rank
#: H200 bench (blind for the model before the start-up transient) and the A100 logs (32 GPUs held out)
BENCH = {"h200x2": MEAS / "h200x2" / "bench-graph.jsonl", "h200x4": MEAS / "h200x4" / "bench-graph.jsonl",
         "h100x2": MEAS / "h100x2" / "bench-graph.jsonl",
         "h100x4": ROOT / "validation" / "collectives-h100-blind_h100x2-h100x4_2026-11-27" / "h100x4" / "bench-graph.jsonl",
         "h200x3": ROOT / "validation" / "collectives-3rank-blind_h200x4_2026-11-27" / "bench3.jsonl"}
A100_LOGS = {8: MEAS / "a100-azure-ndv4" / "all_reduce_8.log", 16: MEAS / "a100-azure-ndv4" / "all_reduce_16.log",
        32: ROOT / "validation" / "a100-link-model-32gpu-heldout_a100-azure-ndv4_2026-11-26" / "all_reduce_32.log"}
#: the line rates of the tests: 18 NVLink4 x 25 GB/s per H200 / H100 SXM; Azure NDv4: 12 NVLink3 x 25 GB/s,
#: 8 HDR NICs of 25 GB/s per node
H200 = {"intra_line_GBps": 450.0, "sm": 90}
A100 = {"intra_line_GBps": 300.0, "net_line_GBps": 25.0, "nics_per_node": 8, "sm": 80}


def rows(*files: Path) -> list[dict]:
    """The nccl-mode collective rows of ``files`` (NCCL's own algorithm and protocol, no NVLS)."""
    m = read_measurements([str(f) for f in files])
    return [r for r in m.rows if r["kind"] == "collective" and r.get("mode", "nccl") == "nccl"
            and not r.get("nvls") and r.get("algorithm") is None and r.get("protocol") is None]


def _table(table) -> str:
    return "  ".join(f"{r.op[:6]} {100 * r.mean_large:.1f}/{100 * r.mean_small:.1f}/{100 * r.worst:.1f}" for r in table)


def _fails(table, large: float, small: float) -> str:
    return "FAIL" if any(r.mean_large > large or r.mean_small > small for r in table) else "ok"


def residuals(h200x2: list[dict]) -> None:
    """The link model's residual at every fit point of the 2x H200 size check (odd positions held out)."""
    fit, _ = split_sizes(h200x2, 1)
    model = fit_link_model(fit, **H200)
    res = np.expm1(model.residuals)
    _, _, col = _split(model.vector(), model.design(fit), len(model.ops))
    print(f"fit points of the 2x H200 size check: median |residual| {100 * np.median(np.abs(res)):.2f}%")
    for i in sorted(range(len(fit)), key=lambda i: (fit[i]["op"], fit[i]["size_bytes"])):
        c = int(col[i])
        print(f"  {fit[i]['op']:<15}{fit[i]['size_bytes'] / 1024:>10.0f} KiB {fit[i]['time_us']:>10.1f} us "
              f"{100 * res[i]:+6.1f}%  {ALGOS[c // 3]}.{PROTOS[c % 3]}")


def a100_sizes(a100: dict[int, list[dict]]) -> None:
    """The 32-GPU prediction of the 8 + 16 GPU fit at every size, with the 8 and 16 GPU logs."""
    model = fit_link_model(a100[8] + a100[16], **A100)

    def mean(rs):
        d = collections.defaultdict(list)
        for r in rs:
            d[r["size_bytes"]].append(r["time_us"])
        return {k: float(np.mean(v)) for k, v in d.items()}

    logs = {n: mean(a100[n]) for n in a100}
    sizes = sorted(logs[32])
    q = [{"op": "all_reduce", "ranks": 32, "nodes": 4, "size_bytes": s} for s in sizes]
    pred = model.predict_us(q)
    _, _, col = _split(model.vector(), model.design(q), len(model.ops))
    print(f"{'bytes':>12}{'8 GPUs':>9}{'16 GPUs':>9}{'32 GPUs':>9}{'model':>9}{'error':>8}  cell")
    for s, p, c in zip(sizes, pred, col):
        print(f"{s:>12.0f}{logs[8].get(s, float('nan')):>9.1f}{logs[16].get(s, float('nan')):>9.1f}"
              f"{logs[32][s]:>9.1f}{p:>9.1f}{100 * (p / logs[32][s] - 1):>+7.1f}%  {ALGOS[int(c) // 3]}.{PROTOS[int(c) % 3]}")


def synthetic() -> tuple[float, float]:
    """The synthetic recovery check of the test file: (fit residual median, mean held-out error)."""
    rng = np.random.default_rng(13)
    sizes = 2.0 ** np.arange(10, 31)
    rs = [{"op": op, "ranks": n, "nodes": n // 8 or 1, "size_bytes": float(s), "time_us": 0.0}
          for op in ("all_reduce", "all_gather") for n in (8, 16, 32) for s in sizes]
    truth = LinkModel(ops=("all_reduce", "all_gather"), floor_us=np.array([9.0, 7.0]), op_eff=np.array([0.9, 1.0]),
                      base_us=np.array([6.0, 14.0, 8.0]), lat_intra_us=np.array([0.7, 1.5, 3.0]),
                      lat_inter_us=np.array([3.0, 5.0, 12.0]), eff_intra=np.array([0.3, 0.6, 0.85]),
                      eff_inter=np.array([0.2, 0.5, 0.7]), **A100)
    t = truth.predict_us(rs) * np.exp(rng.normal(0, 0.01, len(rs)))
    for r, v in zip(rs, t):
        r["time_us"] = float(v)
    model = fit_link_model([r for r in rs if r["ranks"] < 32], **A100)
    held = [r for r in rs if r["ranks"] == 32]
    err = np.abs(model.predict_us(held) / np.array([r["time_us"] for r in held]) - 1)
    return float(np.median(np.abs(np.expm1(model.residuals)))), float(err.mean())


def main(argv: list[str] | None = None) -> int:
    """Run every check and print it; ``argv`` as on the command line."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="example: python tools/transfer_checks.py --residuals",
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--residuals", action="store_true", help="every fit point of the 2x H200 size check")
    ap.add_argument("--a100-sizes", action="store_true", help="the A100 32-GPU prediction at every size")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    h2, h4 = rows(BENCH["h200x2"]), rows(BENCH["h200x4"])
    a100 = {n: rows(p) for n, p in A100_LOGS.items()}
    print("per op: mean error >= 1 MiB / mean < 1 MiB / worst, percent")
    worst = 0.0
    for name, data, lines in (("2x H200", h2, H200), ("A100 8+16", a100[8] + a100[16], A100)):
        for parity, half in ((1, "odd sizes held out"), (0, "even sizes held out")):
            sc = size_check(data, parity=parity, **lines)
            if parity == 1:
                worst = max(worst, *(r.worst for r in sc["table"]))
            print(f"size {name}, {half}: fit residual median {100 * sc['fit_residual_median']:.2f}%"
                  f"{' (target <= 3)' if parity == 1 else ''}\n    {_table(sc['table'])}"
                  f"{'  [<= 5 / <= 15: ' + _fails(sc['table'], 0.05, 0.15) + ']' if parity == 1 else ''}")
    print(f"worst held-out point (odd halves): {100 * worst:.1f}% (<= 12)")
    (a32,) = scale_check(a100[8] + a100[16], a100[32], **A100)
    print(f"scale A100 8+16 -> 32 GPUs: >= 1 MiB {100 * a32.mean_large:.1f}% (<= 10), "
          f"< 1 MiB {100 * a32.mean_small:.1f}% (<= 20), worst {100 * a32.worst:.1f}%")
    for name in ("h200", "h100"):
        sc = scale_check(rows(BENCH[f"{name}x2"]), rows(BENCH[f"{name}x4"]),
                         **H200)
        print(f"scale {name.upper()} 2 -> 4 ranks [<= 10 / <= 20: {_fails(sc, 0.10, 0.20)}]\n    {_table(sc)}")
    sc = scale_check(h2, rows(BENCH["h200x3"]), **H200)
    print(f"scale H200 2 -> 3 ranks, blind [<= 10 / <= 20: {_fails(sc, 0.10, 0.20)}]\n    {_table(sc)}")
    print(f"band factor (2x H200): {band_factor(h2, **H200):.3f}")
    res, held = synthetic()
    print(f"synthetic recovery: fit residual median {100 * res:.2f}% (< 2), 32-GPU mean error {100 * held:.2f}% (< 10)")
    print(f"[{time.perf_counter() - t0:.1f} s]")
    if args.residuals:
        residuals(h2)
    if args.a100_sizes:
        a100_sizes(a100)
    return 0


if __name__ == "__main__":
    sys.exit(main())
