"""Tabulate p2p_ramp.cu's rows: the store rate of each flow in time windows from its kernel's start.

    python validation/probes/nvlink-store-ramp/p2p_ramp/summarize.py rows.jsonl[.gz] [--json out.json]

One line per (mode, blocks, size, fifo) and repetition >= 1 (the first warms the links): the rate (GB/s of
bytes issued by all blocks of the flow, 1e9 bytes/s) in windows 0-20, 20-50, 50-100, 100-200, 200-500,
500-1000, 1000-2000, 2000-5000 and 5000-10000 us after the flow's first block started, the whole kernel's mean rate and
its length, and the spread of the blocks' ends (percent of the length). A rate that rises over the windows
is the drift of NCCL's ring collectives (docs/calibration.md, "What the drift is") without NCCL.

>>> rate_windows([[0, 1000, 2000]], 1000.0, 2000.0, np.array([0.0, 1.0, 2.0]))
[1.0, 1.0]
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys

import numpy as np

#: window edges, microseconds after the flow's start
EDGES_US = (0.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0, 5000.0, 10000.0)


def cumulative(times_ns: list[int], per_stamp: float, per_block: float) -> tuple[np.ndarray, np.ndarray]:
    """(time us, bytes issued) of one block: the stamps after every ``per_stamp`` bytes, the last after its fence."""
    t = np.asarray(times_ns, dtype=float) / 1e3
    b = np.minimum(np.arange(len(t)) * per_stamp, per_block)
    b[-1] = per_block   # the stamp after the block's fence: everything issued (and landed)
    return t, b


def rate_windows(blocks: list[list[int]], per_stamp: float, per_block: float, edges_us: np.ndarray) -> list[float]:
    """GB/s of every window between ``edges_us``, summed over ``blocks`` (each a list of stamps, ns)."""
    total = np.zeros(len(edges_us))
    for stamps in blocks:
        t, b = cumulative(stamps, per_stamp, per_block)
        total += np.interp(edges_us, t, b, left=0.0, right=per_block)
    dt = np.diff(edges_us) * 1e-6
    return [round(float(x), 1) for x in np.diff(total) / dt / 1e9]


def summarize(row: dict) -> dict:
    out = {k: row[k] for k in ("mode", "blocks", "mib", "fifo_kib", "rep")}
    flows = []
    for f in row["flows"]:
        ends = np.array([s[-1] for s in f["t_ns"]], dtype=float) / 1e3
        length = float(ends.max())
        nbytes = f["bytes_per_block"] * len(f["t_ns"])
        flows.append({"from": f["from"], "to": f["to"], "length_us": round(length, 1),
                      "mean_GBps": round(nbytes / (length * 1e-6) / 1e9, 1),
                      "end_spread_pct": round(100 * float(ends.max() - ends.min()) / length, 1),
                      "windows_GBps": rate_windows(f["t_ns"], f["bytes_per_stamp"], f["bytes_per_block"],
                                                   np.array(EDGES_US))})
    out["flows"] = flows
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rows")
    ap.add_argument("--json", help="write the summaries here")
    args = ap.parse_args(argv)
    opener = gzip.open if args.rows.endswith(".gz") else open
    with opener(args.rows, "rt") as fh:
        rows = [json.loads(line) for line in fh if line.startswith("{")]
    summaries = [summarize(r) for r in rows if r["rep"] >= 1]
    head = " ".join(f"{int(a)}-{int(b)}" for a, b in zip(EDGES_US, EDGES_US[1:]))
    print(f"mode blocks MiB fifo rep flow: GB/s in windows (us) {head} | mean GB/s, length us, end spread %")
    for s in summaries:
        for f in s["flows"]:
            w = " ".join(f"{x:.0f}" for x in f["windows_GBps"])
            print(f"{s['mode']} {s['blocks']} {s['mib']:.0f} {s['fifo_kib']} {s['rep']} {f['from']}->{f['to']}: {w} | "
                  f"{f['mean_GBps']:.0f}, {f['length_us']:.0f}, {f['end_spread_pct']:.0f}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(summaries, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
