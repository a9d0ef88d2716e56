"""Transformer accounting, compute model, rank layout and the op DAG of a step."""

from __future__ import annotations

import pytest

from clustersim.config.profile import ComputeParams, GemmPoint
from clustersim.config.scenario import Scenario
from clustersim.simulate.execute import execute_analytical
from clustersim.workload.compute import ComputeModel
from clustersim.workload.model import ModelDims
from clustersim.workload.segments import ComputeSegment, TPCollectiveSegment
from clustersim.workload.transformer import Layout, TransformerStep


def gpt(**kw) -> ModelDims:
    base = dict(layers=96, hidden=12288, heads=96, kv_heads=96, ffn_hidden=4 * 12288, vocab=51200, seq_len=2048,
                bias=True, tied_embeddings=True)
    base.update(kw)
    return ModelDims(**base)


def test_gpt3_params_match_narayanan_eq2():
    m = gpt()
    l, h, V, s = 96, 12288, 51200, 2048
    P = 12 * l * h * h * (1 + 13 / (12 * h) + (V + s) / (12 * l * h))
    assert m.total_params == pytest.approx(P, rel=2e-4)


def test_llama3_405b_params():
    m = ModelDims(layers=126, hidden=16384, heads=128, kv_heads=8, ffn_hidden=53248, vocab=128256, seq_len=8192,
                  mlp="swiglu", norm="rmsnorm", position_embedding="rope")
    assert m.total_params / 1e9 == pytest.approx(405.8, rel=0.005)  # Llama 3 paper: 405B


def test_model_flops_match_korthikanti_eq7():
    m = gpt(tied_embeddings=False)
    l, h, V, s, B = 96, 12288, 51200, 2048, 1536
    F = 72 * B * l * s * h * h * (1 + s / (6 * h) + V / (12 * h * l))
    assert m.model_flops_per_token() * B * s == pytest.approx(F, rel=1e-12)


def test_gemm_efficiency_rolloff_and_table():
    cm = ComputeModel(peak_flops=1e15, hbm_bandwidth=1e12, gemm_efficiency=0.8, gemm_half_flops=1e9,
                      kernel_launch_s=0.0)
    assert cm.efficiency(1000, 500, 1000) == pytest.approx(0.4)  # F = 2 m n k = 1e9 -> half
    assert cm.efficiency(8192, 8192, 8192) == pytest.approx(0.8, rel=0.01)
    assert cm.memory(1e9) == pytest.approx(1e-3)
    comp = ComputeParams(gemm_table=[GemmPoint(m=1024, n=1024, k=1024, efficiency=0.5),
                                     GemmPoint(m=8192, n=8192, k=8192, efficiency=0.9)], kernel_launch_us=0.0)

    class Spec:
        name = "x"
        peak_tflops = {"bf16": 1000.0}
        hbm_bandwidth_GBps = 1000.0

    t = ComputeModel.from_profile(comp, Spec())
    assert t.hbm_bandwidth == pytest.approx(0.9e12)
    assert t.efficiency(1024, 1024, 1024) == pytest.approx(0.5)
    assert t.efficiency(8192, 8192, 8192) == pytest.approx(0.9)
    mid = t.efficiency(2896, 2896, 2896)  # half way in log(FLOPs)
    assert 0.65 < mid < 0.75
    assert t.efficiency(16384, 16384, 16384) == pytest.approx(0.9)  # clamped above


def test_layout_tp_innermost():
    lay = Layout({"tp": 8, "cp": 1, "ep": 1, "dp": 4, "pp": 2}, "tp-cp-ep-dp-pp")
    assert lay.group("tp", dp=1, pp=1) == list(range(40, 48))
    assert lay.group("dp", tp=3, pp=0) == [3, 11, 19, 27]
    assert lay.group("pp", tp=0, dp=0) == [0, 32]
    other = Layout({"tp": 2, "cp": 1, "ep": 1, "dp": 2, "pp": 2}, "dp-tp-cp-ep-pp")
    assert other.group("tp", dp=0, pp=0) == [0, 2]
    assert other.coords(5) == {"tp": 0, "cp": 0, "ep": 0, "dp": 1, "pp": 1}


def scenario(model=None, **par):
    tr = par.pop("training", {"global_batch": 8, "micro_batch": 1})
    mdl = {"layers": 4, "hidden": 1024, "heads": 8, "vocab": 1000, "seq_len": 512}
    mdl.update(model or {})
    return Scenario.model_validate({"name": "t", "cluster": {"topology": "x"}, "model": mdl, "training": tr,
                                    "parallelism": par})


CM = ComputeModel(peak_flops=1e15, hbm_bandwidth=3e12, kernel_launch_s=0.0)


def compute_seconds(unit) -> float:
    """GPU seconds of a unit's compute segments."""
    return sum(s.seconds for s in unit.segments if isinstance(s, ComputeSegment))


def colls(g, axis=None):
    out = []
    for op in g.ops:
        if op.coll is not None and (axis is None or op.coll.axis == axis):
            out.append(op.coll)
        for s in op.segments or []:
            if isinstance(s, TPCollectiveSegment) and (axis in (None, "tp")):
                out.append(s.coll)
    return out


def test_tp_collectives_per_layer():
    st = TransformerStep(scenario(tp=2, dp=4), CM)
    g = st.build()
    tp = [c for c in colls(g, "tp")]
    # 8/4 = 2 micro-batches x 4 layers x (2 fwd + 2 bwd) all-reduces, plus embedding (1 fwd), head (1 bwd)
    # and 3 small vocab-parallel cross-entropy all-reduces per micro-batch
    ar_big = [c for c in tp if c.op == "all_reduce" and c.size_bytes == 512 * 1024 * 2]
    assert len(ar_big) == 2 * (4 * 4 + 2)
    sp = TransformerStep(scenario(tp=2, dp=4, sequence_parallel=True), CM).build()
    ops = {c.op for c in colls(sp, "tp") if c.size_bytes == 512 * 1024 * 2}
    assert ops == {"all_gather", "reduce_scatter"}


def test_ddp_buckets_only_on_last_micro_batch():
    st = TransformerStep(scenario(dp=2, training={"global_batch": 8, "micro_batch": 1}, ddp_bucket_mb=10), CM)
    g = st.build()
    dp = [op for op in g.ops if op.coll is not None and op.coll.axis == "dp"]
    grad_bytes = (4 * st.units[0][1].grad_bytes + st.units[1][1].grad_bytes + st.units[2][1].grad_bytes)
    assert sum(op.coll.size_bytes for op in dp) == pytest.approx(grad_bytes)
    # a bucket closes once past 10 MB; a 50 MB layer of 4 weight matrices fills 4 (a tensor is never split,
    # clustersim.workload.step_pipeline.fill_buckets): head + the first quarter of layer 4, 15 more quarters,
    # then the embedding
    assert all(op.coll.size_bytes >= 10e6 for op in dp[:-1])
    assert len(dp) == 17 and dp[1].coll.size_bytes == pytest.approx(st.units[0][1].grad_bytes / 4)
    last = st.micro_batches - 1
    for op in dp:
        for d in op.deps:
            dep = g.ops[d]
            if dep.stream == "compute":
                assert dep.args.micro_batch == last and dep.args.kind == "B"
    # buckets overlap with the backward: the first bucket starts before the backward ends
    tl = execute_analytical(g, lambda c: 1e-4)
    last_b = max(tl.end[op.id] for op in g.ops if op.args.kind == "B")
    assert min(tl.start[op.id] for op in dp) < last_b


def test_dp_overlap_off_reduces_after_the_whole_backward():
    """parallelism.dp_overlap false (Megatron before --overlap-grad-reduce): every bucket's collective
    starts after the rank's last backward kernel; the same buckets, the same bytes."""
    on = TransformerStep(scenario(dp=2, ddp_bucket_mb=10), CM).build()
    off = TransformerStep(scenario(dp=2, ddp_bucket_mb=10, dp_overlap=False), CM).build()
    dp = lambda g: [op for op in g.ops if op.coll is not None and op.coll.axis == "dp"]  # noqa: E731
    assert [op.coll.size_bytes for op in dp(off)] == [op.coll.size_bytes for op in dp(on)]
    tl_on, tl_off = (execute_analytical(g, lambda c: 1e-4) for g in (on, off))
    last_b = max(tl_off.end[op.id] for op in off.ops if op.args.kind == "B")
    assert min(tl_off.start[op.id] for op in dp(off)) >= last_b
    assert tl_off.makespan > tl_on.makespan


def test_zero_stages_change_collectives():
    ops = lambda z: sorted({c.op for c in colls(TransformerStep(scenario(dp=2, zero=z), CM).build(), "dp")})
    assert ops(0) == ["all_reduce"]
    assert ops(1) == ["all_gather", "reduce_scatter"]
    assert ops(3) == ["all_gather", "reduce_scatter"]
    g3 = TransformerStep(scenario(dp=2, zero=3), CM).build()
    ag = [c for c in colls(g3, "dp") if c.op == "all_gather"]
    # every layer gathered before its forward and its backward, each micro-batch (4 mb, 4 layers); the root
    # units (embedding, head) before the forward only: FSDP2 does not reshard the root after forward
    assert len(ag) == 4 * (2 * 4 + 2)
    # one process group, one NCCL stream: the collectives run one after another in issue order
    nccl = [op for op in g3.ops if op.coll is not None and op.stream in ("dp_ag", "dp_rs")]
    assert all(a.id in b.deps for a, b in zip(nccl, nccl[1:]))
    # within a backward pass the next layer's gather is issued before this layer's reduce-scatter;
    # the next micro-batch's first gather after the last reduce-scatter of this one
    names = [op.name for op in nccl]
    i = names.index("RS head")
    assert names[i - 1:i + 3] == ["AG layer", "RS head", "AG layer", "RS layer"]
    j = names.index("RS embedding")
    assert names[j + 1] == "AG embedding"


def test_recompute_costs_a_forward():
    t0 = execute_analytical(TransformerStep(scenario(training={"global_batch": 1}), CM).build(), lambda c: 0).makespan
    full = scenario(training={"global_batch": 1, "recompute": "full"})
    t1 = execute_analytical(TransformerStep(full, CM).build(), lambda c: 0).makespan
    st = TransformerStep(full, CM)
    fwd_layers = 4 * compute_seconds(st.units.layer.forward)
    assert t1 - t0 == pytest.approx(fwd_layers, rel=1e-9)
    sel = scenario(model={"attention": "eager"}, training={"global_batch": 1, "recompute": "selective"})
    eag = scenario(model={"attention": "eager"}, training={"global_batch": 1})
    ts = execute_analytical(TransformerStep(sel, CM).build(), lambda c: 0).makespan
    te = execute_analytical(TransformerStep(eag, CM).build(), lambda c: 0).makespan
    assert te < ts < t0 + (t1 - t0) + (te - t0)


def test_backward_gemms_twice_forward():
    cm = ComputeModel(peak_flops=1e15, hbm_bandwidth=1e30, gemm_efficiency=0.5, gemm_half_flops=0.0,
                      attention_efficiency=0.5, kernel_launch_s=0.0)
    st = TransformerStep(scenario(model={"attention": "eager", "position_embedding": "none"}), cm)
    f = compute_seconds(st.units.layer.forward)
    b = compute_seconds(st.units.layer.backward)
    assert b == pytest.approx(2 * f)
    flops = st.model.layer_matmul_params * 2 * 512 + 4 * 512 * 512 * 1024
    assert f == pytest.approx(flops / (1e15 * 0.5))


def test_host_overhead_only_when_gpu_waits():
    small = scenario(training={"global_batch": 1})
    fast = TransformerStep(small, CM, host_call_s=0.0).build()
    slow = TransformerStep(small, CM, host_call_s=1e-3).build()
    tf = execute_analytical(fast, lambda c: 0).makespan
    ts = execute_analytical(slow, lambda c: 0).makespan
    assert ts > tf  # 1 ms per kernel: the GPU waits for the host
    tiny = TransformerStep(small, CM, host_call_s=1e-12).build()
    assert execute_analytical(tiny, lambda c: 0).makespan == pytest.approx(tf)


def test_fsdp_prefetch_overlaps_gather_with_previous_layer():
    st = TransformerStep(scenario(dp=2, zero=3, training={"global_batch": 2, "micro_batch": 1}), CM)
    g = st.build()
    tl = execute_analytical(g, lambda c: 1e-5 if c.op == "all_gather" else 0.0)
    comp = [op for op in g.ops if op.stream == "compute"]
    ags = [op for op in g.ops if op.stream == "dp_ag"]
    # the gather of unit u starts before unit u-1 finishes (one unit prefetched ahead)
    overlapped = sum(1 for ag in ags[2:] if any(tl.start[ag.id] < tl.end[c.id] and tl.end[c.id] <= tl.end[ag.id] + 1
                                                for c in comp))
    assert overlapped > 0
    serial = sum(tl.end[op.id] - tl.start[op.id] for op in comp) + len(ags) * 1e-5
    assert tl.makespan < serial  # gathers hidden behind compute


# --- kernel fusion and sustained clocks (2026-11-24) ---------------------------------------------

# (fused against unfused kernels over whole steps: tests/slow/test_workload_slow.py)
ROOT_SCEN = __import__("pathlib").Path(__file__).resolve().parents[2] / "scenarios"


def test_clock_table_interpolation():
    from clustersim.workload.compute import ComputeModel

    cm = ComputeModel(peak_flops=1e15, hbm_bandwidth=3e12, clock_table=[(0.5, 1.05), (1.0, 1.15)])
    assert cm.slowdown_at(0.0) == 1.0
    assert cm.slowdown_at(0.25) == pytest.approx(1.025)
    assert cm.slowdown_at(0.75) == pytest.approx(1.10)
    assert cm.slowdown_at(1.0) == pytest.approx(1.15)
    assert ComputeModel(peak_flops=1e15, hbm_bandwidth=3e12).slowdown_at(0.9) == 1.0


def test_sustained_clock_slows_compute_bound_kernels_by_the_step_duty():
    from clustersim.config.base import load_model
    from clustersim.config.scenario import Scenario
    from clustersim.simulate.resolve import resolve_scenario
    from clustersim.workload.compute import ComputeModel
    from clustersim.workload.transformer import TransformerStep

    rs = resolve_scenario(ROOT_SCEN / "ref-single.yaml", ["model.layers=2", "training.global_batch=2"])
    assert rs.profile.compute.clock_table, "the shipped hgx-h200 profile carries the measured clock table"
    sc = load_model(Scenario, ROOT_SCEN / "ref-single.yaml", ["model.layers=2", "training.global_batch=2"])
    cm = ComputeModel.from_profile(rs.profile.compute, rs.cluster.gpu_spec)
    step = TransformerStep(sc, cm)
    (lf, lb, _), _, _ = step.units
    assert 0.3 < step.compute_duty < 1.0
    assert cm.clock_slowdown == pytest.approx(cm.slowdown_at(step.compute_duty))
    assert cm.clock_slowdown > 1.0
    # the same model without the table: compute-bound kernels at burst speed, memory-bound unchanged
    cm0 = ComputeModel.from_profile(rs.profile.compute.model_copy(update={"clock_table": []}), rs.cluster.gpu_spec)
    step0 = TransformerStep(sc, cm0)
    (lf0, lb0, _), _, _ = step0.units
    t = compute_seconds(lf)
    t0 = compute_seconds(lf0)
    assert t0 < t < t0 * cm.clock_slowdown
    assert step0.compute_duty is None and cm0.clock_slowdown == 1.0


def test_tp_comm_overlap_needs_sequence_parallel(tmp_path, cli):
    r = cli("validate", str(ROOT_SCEN / "hybrid-tp2-pp2-dp2.yaml"),
            "--set", "parallelism.tp_comm_overlap=true", "--set", "parallelism.sequence_parallel=false")
    assert r.returncode == 2 and "sequence_parallel" in r.stderr and "Traceback" not in r.stderr
