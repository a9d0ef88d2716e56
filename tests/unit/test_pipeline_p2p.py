"""The pipeline p2p programs (clustersim.workload.pipeline_p2p) and what the simulator does with them (waiting
kernels, the clock window); against torch.distributed.pipelining itself: tests/slow/test_pipeline_torch_slow.py."""

from __future__ import annotations

import random

import pytest

from clustersim.errors import ClusterSimError
from clustersim.simulate.overlap import _covered, _union, idle_clock_stretch
from clustersim.simulate.run import run_scenario
from clustersim.workload.compute import clock_slowdown
from clustersim.workload.ops import Graph
from clustersim.workload.pipeline_p2p import p2p_program
from clustersim.workload.schedule import pipeline_order

@pytest.mark.parametrize("schedule", ["1f1b", "gpipe"])
@pytest.mark.parametrize("p,m", [(2, 1), (2, 4), (3, 2), (4, 4), (4, 9)])
def test_single_chunk_programs_match_every_transfer_once(schedule, p, m):
    """Each activation and gradient is sent once and received once, the compute order is the model's, and every
    wait names an earlier batch."""
    sends, recvs = [], []
    for s in range(p):
        order = pipeline_order(schedule, p, m, s)
        events = p2p_program(schedule, p, m, s, order)
        batches = 0
        for e in events:
            if e[0] == "batch":
                for x in e[1]:
                    (sends if x[2] == s else recvs).append(x)
                batches += 1
            elif e[0] == "wait":
                assert e[1] < batches, f"{s=}, {e=}"
    expected = {("F", i, s) for i in range(m) for s in range(p - 1)} | {("B", i, s) for i in range(m) for s in range(1, p)}
    assert sorted(sends) == sorted(expected) == sorted(recvs)


def test_1f1b_fuses_the_forward_send_with_the_gradient_receive():
    """Schedule1F1B's steady state: one batch, waited for before the backward."""
    order = pipeline_order("1f1b", 2, 3, 0)
    events = p2p_program("1f1b", 2, 3, 0, order)
    assert ("batch", [("F", 1, 0), ("B", 0, 1)]) in events
    i = events.index(("batch", [("F", 1, 0), ("B", 0, 1)]))
    assert events[i + 1][0] == "wait" and events[i + 2] == ("compute", ("B", 0, 0))


def _run(schedule, p2p, **extra):
    over = ["cluster.topology=dgx-h100", "model.hidden=2048", "model.ffn_hidden=8192", "training.micro_batch=4",
            "training.global_batch=16", f"parallelism.pp_p2p={p2p}"] + [f"{k}={v}" for k, v in extra.items()]
    return run_scenario(f"scenarios/ref-pp2-{schedule}.yaml", fidelity="analytical", overrides=over, keep_timeline=True)


def test_interleaved_receives_wait_beside_compute_and_slow_it():
    """Under torch's program the interleaved schedule posts receives ahead: kernels wait beside compute, and the
    profile's p2p_wait_table stretches that compute; the idealised program posts nothing ahead."""
    res = _run("interleaved", "torch")
    g, tl = res.step.graph, res.step.timeline
    assert g.p2p_kernels and g.p2p_wait is not None and g.p2p_wait[0] > 1.05
    posted = _union([(tl.start[p], tl.end[e]) for r, p, e, recv in g.p2p_kernels if r == 0 and recv])
    beside = sum(_covered(posted, tl.start[op.id], tl.end[op.id]) for op in g.ops
                 if op.rank == 0 and op.stream == "compute" and op.coll is None)
    assert beside > 0.01 * res.step_time_s
    ready = _run("interleaved", "when_ready")
    assert not ready.step.graph.p2p_kernels and ready.step.graph.p2p_wait is None


def test_both_fidelities_agree_with_a_faster_clock_on_idle_ranks():
    """The clock window makes some compute ops shorter (negative stretch): the flow executor takes it off their
    compute as the closed form does."""
    over = ["cluster.topology=dgx-h100", "model.hidden=2048", "model.ffn_hidden=8192", "training.micro_batch=4",
            "training.global_batch=16"]
    a = run_scenario("scenarios/ref-pp2-1f1b.yaml", fidelity="analytical", overrides=over).step_time_s
    f = run_scenario("scenarios/ref-pp2-1f1b.yaml", fidelity="flow", overrides=over).step_time_s
    assert f == pytest.approx(a, rel=0.01)


def test_torch_p2p_needs_a_torch_schedule():
    with pytest.raises(ClusterSimError, match="pp_p2p"):
        run_scenario("scenarios/ref-pp2-1f1b.yaml", overrides=["parallelism.schedule=zb_h1"])


def test_idle_clock_stretch_is_the_busy_share_in_the_window():
    """Against a direct evaluation on random timelines: each op at the clock of its rank's busy share in the
    window centred on it."""
    rng = random.Random(1)
    pts = ((0.5, 1.0), (1.0, 1.2))
    for _ in range(100):
        g, st, en, t = Graph(), [], [], 0.0
        for i in range(rng.randint(1, 10)):
            t += rng.random()
            d = rng.random()
            g.add(0, "compute", f"c{i}", "compute", duration=d)
            st.append(t)
            en.append(t + d)
            t += d * rng.random()
        window, duty = 3 * rng.random() + 0.01, 0.9
        slow = clock_slowdown(list(pts), duty)
        g.clock = (duty, slow, pts, window)
        out = idle_clock_stretch(g, g.ops, st, en)
        span, u = max(en), _union(list(zip(st, en)))
        for op in g.ops:
            a, b = st[op.id], en[op.id]
            lo, hi = max(0.0, (a + b) / 2 - window / 2), min(span, (a + b) / 2 + window / 2)
            share = min(1.0, _covered(u, lo, hi) / (hi - lo))
            assert out.get(op.id, 0.0) == pytest.approx((b - a) * duty * (clock_slowdown(list(pts), duty * share) / slow - 1),
                                                        abs=1e-9), f"{op=}"
