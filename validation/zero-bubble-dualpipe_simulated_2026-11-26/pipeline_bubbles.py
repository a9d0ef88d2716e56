"""Simulated pipeline bubbles and memory of every schedule against DeepSeek-V3 Table 2's closed forms.

Uniform stages (one model of ``8 pp`` layers of h 1024, s 1024: 8 layers a stage, 4 a V chunk; vocabulary 8, no position table, free
memory-bound kernels, free communication: the setup of ``tests/unit/test_zero_bubble.py``); the
op DAG of each schedule is built by ``TransformerStep`` and played by the analytical executor.
The bubble is the makespan minus the busiest rank's compute. F, B (full backward) and W
(weight-gradient GEMMs) are read from the step's own units of a middle stage.

Two cost points: ``--attention on`` (flash attention at 50% of peak: the input-gradient pass is
longer than the forward, as in a real layer) and ``--attention free`` (F = B - W = W, the point
DualPipe's closed form is derived for).

Usage::

    python validation/zero-bubble-dualpipe_simulated_2026-11-26/pipeline_bubbles.py --pp 8 --micro-batches 32 --attention on
    python validation/zero-bubble-dualpipe_simulated_2026-11-26/pipeline_bubbles.py --pp 16 --micro-batches 32 --attention free
"""

from __future__ import annotations

import argparse

from clustersim.config.scenario import Scenario
from clustersim.simulate.execute import free_comm_bubble
from clustersim.workload.compute import ComputeModel
from clustersim.workload.schedule import closed_form_bubble, max_in_flight
from clustersim.workload.segments import ComputeSegment
from clustersim.workload.transformer import TransformerStep

SCHEDULES = [("1f1b", 1), ("zb_h1", 1), ("zb_v", 2), ("dualpipe", 1), ("dualpipe_v", 2)]


def _step(p: int, m: int, sched: str, v: int, attention_eff: float) -> TransformerStep:
    sc = Scenario.model_validate({
        "name": "uniform", "cluster": {"topology": "x"},
        "model": {"layers": 8 * p, "hidden": 1024, "heads": 8, "vocab": 8, "seq_len": 1024,
                  "position_embedding": "none"},
        "training": {"global_batch": m, "micro_batch": 1},
        "parallelism": {"pp": p, "schedule": sched, "virtual_stages": v}})
    cm = ComputeModel(peak_flops=1e15, hbm_bandwidth=1e30, gemm_efficiency=0.8, gemm_half_flops=0.0,
                      attention_efficiency=attention_eff, kernel_launch_s=0.0)
    return TransformerStep(sc, cm)


def _seconds(units) -> float:
    return sum(s.seconds for u in units for s in u.segments if isinstance(s, ComputeSegment))


def _bubble(step: TransformerStep) -> float:
    return free_comm_bubble(step.build())[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="Example: python validation/zero-bubble-dualpipe_simulated_2026-11-26/pipeline_bubbles.py --pp 8 --micro-batches 32")
    ap.add_argument("--pp", type=int, default=8)
    ap.add_argument("--micro-batches", type=int, default=32)
    ap.add_argument("--attention", choices=("on", "free"), default="on")
    a = ap.parse_args()
    p, m = a.pp, a.micro_batches
    eff = 0.5 if a.attention == "on" else 1e12
    print(f"pp={p}, m={m}, attention {a.attention}; F, B, W in ms per chunk (V schedules: half stages);")
    print("bubble in ms; params and activations (stage units) per GPU against 1F1B's stage")
    print(f"{'schedule':<11}{'F':>6}{'B':>6}{'W':>6}{'closed form':>12}{'simulated':>10}{'diff':>7}"
          f"{'params':>7}{'acts':>6}")
    print("-" * 71)
    base_params = _step(p, m, "1f1b", 1, eff).stage_params(1)
    for sched, v in SCHEDULES:
        step = _step(p, m, sched, v, eff)
        f = _seconds(step.chunk_units(1, "F"))
        if step.split_backward:
            w = _seconds(step.chunk_units(1, "W"))
            b = _seconds(step.chunk_units(1, "B")) + w
        else:
            w = _seconds(_step(p, m, "zb_h1", 1, eff).chunk_units(1, "W"))
            b = _seconds(step.chunk_units(1, "B"))
        form = closed_form_bubble(sched, p, f, b, w)
        sim = _bubble(step)
        # parameters of a middle rank against 1F1B's, activations of the fullest rank in stage units
        params = step.stage_params(1) / base_params
        acts = max(max_in_flight(step.orders[r]) for r in range(p)) / (2 if v == 2 else 1)
        print(f"{sched:<11}{1e3 * f:6.2f}{1e3 * b:6.2f}{1e3 * w:6.2f}{1e3 * form:12.2f}{1e3 * sim:10.2f}"
              f"{100 * (sim / form - 1) if form else 0.0:6.1f}%{params:6.1f}x{acts:6.1f}")


if __name__ == "__main__":
    main()
