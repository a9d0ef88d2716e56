"""The interleaved pipeline programs (clustersim.workload.pipeline_p2p) against torch.distributed.pipelining
itself (moved from tests/unit/test_pipeline_p2p.py): importing torch takes most of it, seconds on a small
machine."""

from __future__ import annotations

import pytest

from clustersim.workload.pipeline_p2p import interleaved_programs, torch_interleaved_order
from clustersim.workload.schedule import pipeline_order

pytestmark = pytest.mark.slow

SHAPES = [(2, 2, 2), (2, 4, 2), (2, 8, 3), (4, 4, 2), (4, 8, 2), (4, 16, 4), (3, 6, 2)]


def _torch_orders(S, p, m, v):
    """torch 2.13's compute-only interleaved orders (ScheduleInterleaved1F1B._calculate_single_rank_operations)."""
    mpr = m // max(1, m // p)
    out = {}
    for r in range(p):
        warm = S._get_warmup_ops(r, v, mpr, p, m, multiply_factor=2)

        def fwd(step, r=r):
            return ((step // mpr) % v) * p + r

        def bwd(step, r=r, warm=warm):
            return (v - 1 - ((step - warm) // mpr) % v) * p + r

        out[r] = S._get_1f1b_rank_ops(v, p, warm, v * m - warm, warm, r, fwd, bwd)
    return out


@pytest.mark.parametrize("p,m,v", SHAPES)
def test_interleaved_lowering_is_torchs(p, m, v):
    """The order with torch's idle steps and the send / receive placement equal torch's own functions."""
    S = pytest.importorskip("torch.distributed.pipelining.schedules")
    torch_orders = _torch_orders(S, p, m, v)
    progs = interleaved_programs([pipeline_order("interleaved", p, m, r, v) for r in range(p)], p, m, v)
    # torch's own lowering (_prepare_schedule_with_comms): unshard/reshard and reduce-grad actions, then send/recv
    comm = S._add_send_recv({r: S._add_reduce_grad(S._add_unshard_reshard(list(torch_orders[r])), m) for r in range(p)},
                            stage_to_rank=lambda s: s % p, num_stages=p * v)
    for r in range(p):
        mine = torch_interleaved_order(pipeline_order("interleaved", p, m, r, v), p, m, v, r)
        theirs = [None if a is None else ("F" if a.computation_type == S.FORWARD else "B", a.microbatch_index,
                                          a.stage_index // p) for a in torch_orders[r]]
        assert mine == theirs
        expect = []
        for a in comm[r]:
            ct = a.computation_type
            if ct in (S.FORWARD, S.FULL_BACKWARD):
                expect.append(("C", "F" if ct == S.FORWARD else "B", a.microbatch_index, a.stage_index))
            elif ct in (S.SEND_F, S.SEND_B):
                expect.append(("X", "F" if ct == S.SEND_F else "B", a.microbatch_index, a.stage_index))
            elif ct in (S.RECV_F, S.RECV_B):
                kind = "F" if ct == S.RECV_F else "B"
                expect.append(("X", kind, a.microbatch_index, a.stage_index - 1 if kind == "F" else a.stage_index + 1))
        got = []
        for e in progs[r]:
            if e[0] == "compute":
                got.append(("C", e[1][0], e[1][1], e[1][2] * p + r))
            elif e[0] == "batch":
                ((kind, mb, src),) = e[1]
                got.append(("X", kind, mb, src))
        assert got == expect
