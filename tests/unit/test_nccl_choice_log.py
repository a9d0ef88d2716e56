"""The link model's emulation of NCCL's choice against NCCL's own per-call log (2x H200, NCCL 2.28.9).

``tests/data/h200x2/nccl_tuning.log``: rank 0's ``NCCL_DEBUG_SUBSYS=TUNING`` lines, one per call, for
all_gather, broadcast, all_reduce and reduce_scatter from 1 KiB to 4 GiB (``validation/probes/collective-startup-drift/coll_drift3_x2.sh``).
NCCL logs ``nBytes``: the per-rank count for AllGather / ReduceScatter (the model's size over the ranks), the
buffer for AllReduce / Broadcast.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from clustersim.collectives.ncclchoice import ALGOS, PROTOS, nccl_choice

LOG = Path(__file__).resolve().parents[1] / "data" / "h200x2" / "nccl_tuning.log"
LINE = re.compile(r"^(\w+): (\d+) Bytes -> Algo (\w+) proto (\w+) channel\{Lo\.\.Hi\}=\{(\d+)\.\.(\d+)\}")
OPS = {"AllGather": "all_gather", "ReduceScatter": "reduce_scatter", "AllReduce": "all_reduce", "Broadcast": "broadcast"}
RANKS = 2


def calls() -> list[tuple[str, float, str, str]]:
    """(op, model size in bytes, NCCL's algorithm, NCCL's protocol) of every logged call."""
    out = []
    for line in LOG.read_text().splitlines():
        m = LINE.match(line)
        if m is None:
            continue
        op = OPS[m.group(1)]
        size = float(m.group(2)) * (RANKS if op in ("all_gather", "reduce_scatter") else 1)
        out.append((op, size, m.group(3).lower(), m.group(4).lower()))
    return out


def test_log_covers_every_op_and_the_protocol_switch():
    c = calls()
    assert len(c) == 44
    assert {op for op, *_ in c} == set(OPS.values())
    # NCCL runs LL and Simple here and never LL128, across 1 KiB - 4 GiB
    assert {p for *_, p in c} == {"ll", "simple"}


@pytest.mark.parametrize("op", sorted(OPS.values()))
def test_nccl_choice_matches_nccls_own_log(op):
    logged = [(s, a, p) for o, s, a, p in calls() if o == op]
    sizes = np.array([s for s, _, _ in logged])
    got = nccl_choice(op, RANKS, 1, sizes, sm=90, intra_line_GBps=450.0)
    for (s, a, p), g in zip(logged, got):
        assert (ALGOS[g // 3], PROTOS[g % 3]) == (a, p), f"{op} {s:.0f} B: model {ALGOS[g // 3]}/{PROTOS[g % 3]}, NCCL {a}/{p}"
