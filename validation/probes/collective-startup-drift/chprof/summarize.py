"""Per-call channel spans of NCCL collectives from chprof.c's lines (validation/probes/collective-startup-drift/coll_chprof_x2.sh).

    python validation/probes/collective-startup-drift/chprof/summarize.py validation/probes/collective-startup-drift/round4/chprof-ch24.txt.gz ...

For every (op, size) and rank: the call's span on the GPU (first channel start to last channel stop), the spread
of the channels' starts and stops, and each channel's rate (its share of the bus bytes over its own time),
medians over the calls after the first ten (warm-up). The size is the bench's (all_gather: the output), from
the sweep's sizes in order, since NCCL's count is in bytes for some ops and elements for others.

>>> callable(main)
True
"""

from __future__ import annotations

import collections
import gzip
import sys

import numpy as np

#: the sweep of coll_chprof_x2.sh (MiB) and the bus factor of each op on 2 ranks
SIZES_MIB = (16, 64, 256, 1024)
BUS = {"AllGather": 0.5, "ReduceScatter": 0.5, "AllReduce": 1.0, "Broadcast": 1.0}


def summarize(path: str) -> list[str]:
    """Table lines for one file of chprof lines (both ranks)."""
    calls: dict[tuple, list[tuple[int, int, int]]] = collections.defaultdict(list)
    with gzip.open(path, "rt") if path.endswith(".gz") else open(path) as f:
        for line in f:
            seq, func, count, _nch, _algo, _proto, ch, start, stop = line.split()
            if int(count) >= 2 ** 20:   # the sweep's calls, not the barriers' one-element all_reduces
                calls[(func, int(count), int(seq))].append((int(ch), int(start), int(stop)))
    counts = collections.defaultdict(set)
    for func, count, _ in calls:
        counts[func].add(count)
    size_of = {(f, c): SIZES_MIB[i] for f, cs in counts.items() for i, c in enumerate(sorted(cs))}
    out: dict[tuple, list[tuple[float, ...]]] = collections.defaultdict(list)
    for (func, count, seq), chans in calls.items():
        by_channel = collections.defaultdict(list)
        for c in sorted(chans, key=lambda x: x[1]):
            by_channel[c[0]].append(c)
        for rank in range(2):   # the two ranks' events of one channel, in start order (both start within ~1 ms)
            cc = [v[rank] for v in by_channel.values() if len(v) > rank]
            st = np.array([c[1] for c in cc], dtype=float)
            sp = np.array([c[2] for c in cc], dtype=float)
            mib = size_of[(func, count)]
            per_ch = BUS.get(func, 1.0) * mib * 2 ** 20 / len(cc)
            out[(func, mib)].append((seq, (sp.max() - st.min()) / 1e3, (st.max() - st.min()) / 1e3,
                                     (sp.max() - sp.min()) / 1e3, float(np.median(per_ch / (sp - st))),
                                     len(cc)))
    lines = [f"{'op':<11}{'MiB':>6}{'ch':>4}{'calls':>6}{'span us':>10}{'start spr':>10}{'stop spr':>9}"
             f"{'%':>5}{'GB/s/ch':>9}"]
    for (func, mib), rows in sorted(out.items()):
        v = np.array([r[1:] for r in sorted(rows)[20:]])   # skip the first ten calls of each rank (warm-up)
        m = np.median(v, axis=0)
        lines.append(f"{func:<11}{mib:>6}{int(m[4]):>4}{len(v):>6}{m[0]:>10.1f}{m[1]:>10.1f}{m[2]:>9.1f}"
                     f"{100 * m[2] / m[0]:>5.0f}{m[3]:>9.2f}")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Print the table of every file given."""
    for path in (argv if argv is not None else sys.argv[1:]):
        print(path)
        print("\n".join(summarize(path)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
