"""Zero-bubble (ZB-H1, ZB-V) and DualPipe (DualPipe, DualPipeV) schedules: valid orders, the
backward split, the simulated bubble against DeepSeek-V3 Table 2's closed forms, memory per stage."""

from __future__ import annotations

import pytest

from clustersim.config.scenario import Scenario
from clustersim.errors import ClusterSimError
from clustersim.simulate.execute import execute_analytical, free_comm_bubble
from clustersim.workload.compute import ComputeModel
from clustersim.workload.memory import layer_saved_bytes
from clustersim.workload.schedule import (max_in_flight, model_stages, pipeline_order, pipeline_slots, placement,
                                          virtual_stage)
from clustersim.workload.segments import ComputeSegment
from clustersim.workload.transformer import TransformerStep

NEW = [("zb_h1", 1), ("zb_v", 2), ("dualpipe", 1), ("dualpipe_v", 2)]
COMBOS = [(2, 4), (4, 8), (4, 9), (4, 16), (6, 12), (8, 16), (8, 32)]


def _play(sched: str, p: int, m: int, v: int) -> dict:
    """Run every rank's slots in order with unit times; the end time of every chunk. Fails on a
    chunk that waits for something never run (a deadlock) or that runs before its inputs."""
    slots = {r: pipeline_slots(sched, p, m, r, v) for r in range(p)}
    nvs = model_stages(sched, p, v)
    end: dict = {}
    pos, clock = dict.fromkeys(range(p), 0), dict.fromkeys(range(p), 0.0)

    def need(kind, mb, chunk, r):
        vs = virtual_stage(sched, p, r, chunk)
        if kind == "F":
            return None if vs == 0 else ("F", mb) + placement(sched, p, vs - 1, chunk)
        if kind == "B":
            return ("F", mb, r, chunk) if vs == nvs - 1 else ("B", mb) + placement(sched, p, vs + 1, chunk)
        return ("B", mb, r, chunk)

    moved = True
    while moved:
        moved = False
        for r in range(p):
            while pos[r] < len(slots[r]):
                slot = slots[r][pos[r]]
                inside = {(k, mb, r, c) for k, mb, c in slot}
                deps = [need(k, mb, c, r) for k, mb, c in slot]
                if any(d is not None and d not in end and d not in inside for d in deps):
                    break
                t = max([clock[r]] + [end[d] for d in deps if d in end]) + len(slot)
                for k, mb, c in slot:
                    end[(k, mb, r, c)] = t
                clock[r], pos[r] = t, pos[r] + 1
                moved = True
    assert all(pos[r] == len(slots[r]) for r in range(p)), f"{sched} p={p} m={m}: deadlock at {pos}"
    return end


@pytest.mark.parametrize("sched,v", NEW)
@pytest.mark.parametrize("p,m", COMBOS)
def test_orders_are_valid(sched, v, p, m):
    if sched == "dualpipe" and (p % 2 or m % 2) or sched.startswith("dualpipe") and m < 2 * p:
        with pytest.raises(ClusterSimError):
            pipeline_slots(sched, p, m, 0, v)
        return
    end = _play(sched, p, m, v)
    for r in range(p):
        order = pipeline_order(sched, p, m, r, v)
        assert len(set(order)) == len(order)
        pos = {x: i for i, x in enumerate(order)}
        for kind, mb, c in order:  # F before B before W of each micro-batch on each stage
            assert pos[("F", mb, c)] < pos[("B", mb, c)] < pos[("W", mb, c)], f"{r=}, {kind=}, {mb=}, {c=}"
    # every micro-batch runs F, B and W once on every virtual stage
    nvs = model_stages(sched, p, v)
    runs = sorted((k, mb, virtual_stage(sched, p, r, c)) for k, mb, r, c in end)
    assert runs == sorted((k, mb, vs) for k in "FBW" for mb in range(m) for vs in range(nvs))


def test_constraints_exit_clearly():
    from clustersim.config.scenario import split_schedule_problem

    assert "even pp" in split_schedule_problem("dualpipe", 3, 1, 12)
    assert ">= 2*pp" in split_schedule_problem("dualpipe_v", 4, 2, 6)
    assert "virtual_stages: 2" in split_schedule_problem("zb_v", 4, 1, 8)
    assert "even number" in split_schedule_problem("dualpipe", 4, 1, 9)
    with pytest.raises(ValueError, match="dualpipe needs"):
        _scenario(4, 6, "dualpipe", 1)


def _scenario(p: int, m: int, sched: str, v: int, seq_len: int = 1024, layers: int | None = None) -> Scenario:
    """A model whose stages are uniform (4 layers a chunk unless ``layers``): tiny vocabulary, no position table."""
    chunks = 2 if sched in ("zb_v", "dualpipe_v") else v
    return Scenario.model_validate({
        "name": "uniform", "cluster": {"topology": "x"},
        "model": {"layers": layers or 4 * p * chunks, "hidden": 1024, "heads": 8, "vocab": 8, "seq_len": seq_len,
                  "position_embedding": "none"},
        "training": {"global_batch": m, "micro_batch": 1},
        "parallelism": {"pp": p, "schedule": sched, "virtual_stages": v},
    })


def _cm(attention_efficiency: float) -> ComputeModel:
    # memory-bound kernels free: the stages are the layers' GEMMs (and attention) only
    return ComputeModel(peak_flops=1e15, hbm_bandwidth=1e30, gemm_efficiency=0.8, gemm_half_flops=0.0,
                        attention_efficiency=attention_efficiency, kernel_launch_s=0.0)


def _seconds(units) -> float:
    return sum(seg.seconds for u in units for seg in u.segments if isinstance(seg, ComputeSegment))


def _simulated_bubble(step) -> tuple[float, float]:
    """(makespan minus the busiest rank's compute, that compute) with free communication."""
    return free_comm_bubble(step.build())


def _fbw(step, vstage: int) -> tuple[float, float, float]:
    """F, full backward B and W of a virtual stage, from the step's own units."""
    f = _seconds(step.chunk_units(vstage, "F"))
    b_in, w = _seconds(step.chunk_units(vstage, "B")), _seconds(step.chunk_units(vstage, "W"))
    return f, b_in + w, w


def test_backward_split_conserves_the_backward():
    """B (input gradient) + W (weight-gradient GEMMs) is the whole backward, W is the wgrad GEMMs."""
    whole = TransformerStep(_scenario(4, 8, "1f1b", 1), _cm(0.5))
    split = TransformerStep(_scenario(4, 8, "zb_h1", 1), _cm(0.5))
    for vs in (1, 2):
        full = _seconds(whole.chunk_units(vs, "B"))
        f, b, w = _fbw(split, vs)
        assert b == pytest.approx(full, rel=1e-12), f"{vs=}"
        # W is the layers' weight-gradient GEMMs: here as long as the forward GEMMs (one efficiency),
        # i.e. the forward without its attention kernels (4 layers per stage)
        assert 0 < w < b, f"{vs=}"
        assert w == pytest.approx(f - 4 * _attention_forward(split), rel=1e-9), f"{vs=}"


def _attention_forward(step) -> float:
    m = step.model
    flops = 4.0 * m.seq_len * m.seq_len * m.head_dim * m.heads * 0.5
    return step.compute.attention(flops, 1, "fwd", seq=m.seq_len, head_dim=m.head_dim)


@pytest.mark.parametrize("p,m", [(4, 8), (4, 16), (8, 32)])
def test_1f1b_and_zb_h1_bubbles_match_table_2(p, m):
    """1F1B (PP-1)(F+B) and ZB1P (PP-1)(F+B-2W), with attention making F, B and W all differ."""
    one = TransformerStep(_scenario(p, m, "1f1b", 1), _cm(0.5))
    bubble, _ = _simulated_bubble(one)
    f, b, w = _fbw(TransformerStep(_scenario(p, m, "zb_h1", 1), _cm(0.5)), 1)
    assert f != pytest.approx(b - w, rel=0.05)  # a real test: the passes differ
    assert bubble == pytest.approx((p - 1) * (f + b), rel=0.01)
    zb = TransformerStep(_scenario(p, m, "zb_h1", 1), _cm(0.5))
    bubble, _ = _simulated_bubble(zb)
    assert bubble == pytest.approx((p - 1) * (f + b - 2 * w), rel=0.01)


@pytest.mark.parametrize("p,m", [(4, 8), (4, 16), (8, 16), (8, 32)])
def test_dualpipe_bubbles_match_table_2(p, m):
    """DualPipe (PP/2-1)(F&B+B-3W) with F&B = F+B when nothing is left to overlap, at the balanced
    point the closed form is derived for (a forward as long as an input-gradient pass: attention
    free here, so F = B - W = W); DualPipeV on p ranks is the same form over its 2p half stages."""
    step = TransformerStep(_scenario(p, m, "dualpipe", 1), _cm(1e12))
    f, b, w = _fbw(step, 1)
    assert f == pytest.approx(b - w, rel=1e-3)
    bubble, _ = _simulated_bubble(step)
    assert bubble == pytest.approx((p / 2 - 1) * ((f + b) + b - 3 * w), rel=0.01, abs=1e-3 * f)
    step = TransformerStep(_scenario(p, m, "dualpipe_v", 2), _cm(1e12))
    f, b, w = _fbw(step, 1)  # per half stage (chunk)
    bubble, _ = _simulated_bubble(step)
    assert bubble == pytest.approx((2 * p / 2 - 1) * ((f + b) + b - 3 * w), rel=0.01)


@pytest.mark.parametrize("p,m", [(4, 8), (8, 32)])
def test_zb_v_halves_zb_h1(p, m):
    """ZB-V at equal forward, input- and weight-gradient passes: ZB1P's form over its chunks,
    (PP-1)(F+B-2W) with chunk times, i.e. half ZB-H1's bubble on the same model (a chunk is half
    a stage), with the same peak activations as 1F1B (test below)."""
    zb_v = TransformerStep(_scenario(p, m, "zb_v", 2), _cm(1e12))
    zb_h1 = TransformerStep(_scenario(2 * p, m, "zb_h1", 1), _cm(1e12))  # stages the size of zb_v's chunks
    f, b, w = _fbw(zb_v, 1)
    assert (f, b, w) == pytest.approx(_fbw(zb_h1, 1), rel=1e-9)
    bubble_v, work = _simulated_bubble(zb_v)
    assert bubble_v == pytest.approx((p - 1) * (f + b - 2 * w), rel=0.01)
    # ZB-H1 on p ranks of the same model (stages of two chunks): twice that
    same_model = TransformerStep(_scenario(p, m, "zb_h1", 1, layers=8 * p), _cm(1e12))
    assert _simulated_bubble(same_model)[0] == pytest.approx(2 * bubble_v, rel=0.01)


@pytest.mark.parametrize("p,m", [(4, 8), (8, 16)])
def test_in_flight_and_parameters_match_table_2(p, m):
    """Activation memory per rank: 1F1B PP, ZB1P PP, DualPipe PP+1 micro-batches of a stage (at the
    fullest rank); parameters per rank 1x, 1x and 2x. DualPipeV: PP+1 over its 2p half stages."""
    def peak(sched, v):
        return max(max_in_flight(pipeline_order(sched, p, m, r, v)) for r in range(p))

    assert peak("1f1b", 1) == p
    assert peak("zb_h1", 1) == p
    assert peak("dualpipe", 1) == p + 1
    assert peak("dualpipe_v", 2) == 2 * p + 1  # half-stage chunks
    assert peak("zb_v", 2) == 2 * p  # the p stage activations of 1F1B
    base = TransformerStep(_scenario(p, m, "1f1b", 1), _cm(0.5))
    dual = TransformerStep(_scenario(p, m, "dualpipe", 1), _cm(0.5))
    for r in range(1, p - 1):  # middle ranks: no embedding or head
        assert dual.stage_params(r) == pytest.approx(2 * base.stage_params(r)), f"{r=}"
    vee = TransformerStep(_scenario(p, m, "dualpipe_v", 2), _cm(0.5))
    half = TransformerStep(_scenario(p, m, "1f1b", 1), _cm(0.5))  # same layers per rank: 1x
    assert vee.stage_params(1) == pytest.approx(2 * half.stage_params(1))  # vee's model has 2x the layers


def test_memory_model_counts_the_schedules_activations():
    """The memory report's activations follow the in-flight counts: DualPipe's fullest rank holds
    PP+1 stage activations against 1F1B's PP."""
    from clustersim.workload.memory import _stage_row, state_bytes_per_param

    p, m = 4, 8
    rows = {}
    for sched in ("1f1b", "dualpipe"):
        step = TransformerStep(_scenario(p, m, sched, 1), _cm(0.5))
        sb = state_bytes_per_param(step.training.precision, step.training.optimizer)
        act = layer_saved_bytes(step.model, micro_batch=1, tp=1, sp=False, recompute="none",
                                kernel_fusion="fused", act_bytes=2)
        rows[sched] = max(_stage_row(step, r, sb, act)["activations"] for r in range(1, p - 1))
    assert rows["dualpipe"] / rows["1f1b"] == pytest.approx((p + 1) / (p - 1), rel=1e-6)


def test_cli_exits_2_with_the_reason(tmp_path, capsys):
    from pathlib import Path

    from clustersim.cli import main

    hybrid = Path(__file__).resolve().parents[2] / "scenarios" / "hybrid-tp2-pp2-dp2.yaml"
    for sets, words in ((["parallelism.schedule=zb_v"], "virtual_stages: 2"),
                        (["parallelism.schedule=dualpipe", "parallelism.pp=2", "training.global_batch=4"], "even"),
                        (["parallelism.schedule=dualpipe_v", "parallelism.virtual_stages=2",
                          "training.global_batch=8"], ">= 2*pp")):
        with pytest.raises(SystemExit) as e:
            main(["run", str(hybrid), "--fidelity", "analytical"] + [x for s in sets for x in ("--set", s)])
        assert e.value.code == 2
        err = capsys.readouterr().err
        assert "parallelism.schedule" in err and words in err


@pytest.mark.parametrize("sched,v", [("zb_h1", 1), ("dualpipe", 1)])
def test_flow_bubble_equals_analytical_with_the_network(sched, v, tmp_path):
    """Uniform stages (32 layers, ~1 ms a forward) on 4 H200 with real NVLink sends (~26 us for
    2 MB): the flow executor, which moves the sends through the network, gives the analytical
    executor's bubble, and both exceed the closed form only by the sends on the critical path."""
    import yaml

    from clustersim.simulate.resolve import resolve_scenario
    from clustersim.simulate.fidelity import execute_graph
    from clustersim.simulate.step import comm_cache_for, effective_cluster
    from clustersim.workload.schedule import closed_form_bubble

    doc = _scenario(4, 8, sched, v, layers=128).model_dump(exclude_none=True)  # 32 layers a stage
    doc["cluster"] = {"topology": "hgx-h200", "gpus": 4}
    path = tmp_path / "u.yaml"
    path.write_text(yaml.safe_dump(doc))
    rs = resolve_scenario(path)
    step = TransformerStep(rs.scenario, _cm(1e12))
    graph = step.build()
    comm = comm_cache_for(rs)
    bubbles = []
    for tl in (execute_analytical(graph, comm),
               execute_graph(rs, effective_cluster(rs), graph, comm, fidelity="flow").timeline):
        busy: dict[int, float] = {}
        for op in graph.ops:
            if op.category == "compute":
                busy[op.rank] = busy.get(op.rank, 0.0) + tl.end[op.id] - tl.start[op.id]
        span = max(tl.end[o.id] for o in graph.ops if o.category == "compute")
        bubbles.append(span - max(busy.values()))
    assert bubbles[1] == pytest.approx(bubbles[0], rel=0.01)
    form = closed_form_bubble(sched, 4, *_fbw(step, 1))
    assert form < bubbles[0] < form * 1.3


@pytest.mark.parametrize("p", [4, 8])
def test_dualpipe_mirror_ranks_exchange_their_gradients(p):
    """DualPipe's two copies of each stage (ranks r and p-1-r) all-reduce the rank's whole gradient,
    once per step, after both backwards; the other schedules have no such exchange."""
    step = TransformerStep(_scenario(p, 2 * p, "dualpipe", 1), _cm(0.5))
    g = step.build()
    mirror = [op for op in g.ops if op.name == "dualpipe mirror all_reduce"]
    assert len(mirror) == p // 2
    for op in mirror:
        (a, b), = op.coll.groups
        assert a + b == p - 1                          # rank r with rank p-1-r
        assert op.coll.size_bytes == pytest.approx(step.stage_params(a) * step.grad_dtype_bytes), f"{op=}"
        for rank in (a, b):                            # after each rank's last compute
            assert g.last(rank, "compute") in op.deps or any(
                g.ops[d].rank == rank for d in op.deps)
    optimizer = [op for op in g.ops if op.name == "optimizer"]
    assert all(any(g.ops[d].name == "dualpipe mirror all_reduce" for d in op.deps) for op in optimizer)
    assert not [op for op in TransformerStep(_scenario(p, 2 * p, "dualpipe_v", 2), _cm(0.5)).build().ops
                if op.name == "dualpipe mirror all_reduce"]


@pytest.mark.parametrize("sched,v", [("zb_h1", 1), ("zb_v", 2), ("dualpipe", 1), ("dualpipe_v", 2)])
def test_planner_bound_is_below_the_step_and_counts_the_fill(sched, v):
    """The planner's lower bound for the split schedules: never above the simulated step (free
    communication), and above the busiest rank's work alone by the pipeline fill it proves."""
    from clustersim.plan.bound import step_lower_bound

    p, m = 4, 8
    step = TransformerStep(_scenario(p, m, sched, v), _cm(0.5))
    bubble, work = _simulated_bubble(step)
    bound = step_lower_bound(step)
    assert bound <= (bubble + work) * (1 + 1e-9)
    f0 = _seconds(step.chunk_units(0, "F"))
    assert bound >= work + 0.9 * f0        # about a stage's forward of fill beyond the busiest rank
