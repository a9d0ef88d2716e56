"""Real GPUs (issue 4): `clustersim run` against measured step times of calibrate/train_gpt.py.

Two sets (docs/validation.md sections 6 and 8):

* GPU-bound reference runs (``GPU_BOUND``): GPT 1.2B at micro-batch 4 x 2048 tokens on 1 and 2
  H200 (single, DDP, FSDP, TP 2, PP 2 with GPipe, 1F1B, interleaved) and 1 H100, the shipped
  gpt-1b-ddp scenario, fresh-machine repeats, and the blind sets 2 and 3 (one-GPU variations of the
  model features). Every row within 10%; no exceptions.
* Host-bound runs (the first reference choice, GPT 350M at micro-batch 1): steps bound by the
  Python thread that issues the kernels on these VMs, whose speed varies 1.6x between machines;
  their misses are listed below.

The measured rows are copies of ``calibrate/raw/{h200x2,h200x4,h100}/train_steps.jsonl`` in
``tests/data/real_gpu/`` (one JSON object per configuration: scenario name, ``--set`` overrides,
median step time of the timed steps). Each row is predicted from the scenario file plus the same
overrides, with the topology's default profile (``calibrate/profiles/hgx-h200.yaml`` and
``dgx-h100.yaml``), at both fidelities. Nothing is read from the measurement except the
configuration and the number it is compared with.

Tolerance: 10% (issue 4, "Real GPUs"). Rows the model does not reach are listed in
``KNOWN_MISS`` with the reason (docs/validation.md, "Real GPUs"); they are strict expected
failures, so a model change that brings one inside 10% shows up. Every row, miss or not, must stay
inside ``GUARD`` (a regression guard) and the two fidelities must agree.

Run ``python tests/integration/test_real_gpu_validation.py`` to print the validation table.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from clustersim.config.base import load_model
from clustersim.config.scenario import Scenario
from clustersim.simulate.run import run_scenario

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "real_gpu"
FILES = ("h200x2-train_steps.jsonl", "h100-train_steps.jsonl", "h200x4-train_steps.jsonl")
GPU_BOUND = "gpu-bound-train_steps.jsonl"  # calibrate/raw/{heldout,blind2,blind3}/train_steps.jsonl
TOL = 0.10
GUARD = 0.40

# (scenario, sorted overrides) -> why the model misses it (see docs/validation.md "Real GPUs")
_MP = ("multi-process run: per-rank host time per kernel call is ~1.4x that of the single-process run "
       "(measured rows themselves), not in the profile; on another VM DDP's overhead over one process was modelled "
       "right and the one-process level itself ran 6-15% slow: the VMs' host speed (docs/validation.md 6n, 6p)")
KNOWN_MISS = {
    ("ref-single", ("cluster.gpus=1",)): "host-bound; profile per_call_overhead_us (29.5 us, fitted on 2-4 "
                                          "processes) exceeds the single-process cost (~24 us)",
    ("ref-ddp2", ("cluster.gpus=2",)): _MP,
    ("ref-tp2", ("cluster.gpus=2",)): "custom-Function TP: host cost per all-reduce far above the bench's",
    ("ref-pp2-1f1b", ("cluster.gpus=2",)): _MP + " (-10.1%: at the edge; host speed of these VMs varies "
                                             "1.6x between machines, docs/validation.md section 8)",
    ("ref-pp2-gpipe", ("cluster.gpus=2",)): _MP + "; GPipe 25 ms slower than 1F1B, unexplained",
    ("ref-pp2-interleaved", ("cluster.gpus=2",)): _MP,
    ("ref-pp2-1f1b", ("cluster.gpus=4", "parallelism.pp=4")): _MP,
    ("ref-tp2", ("cluster.gpus=4", "parallelism.tp=4")): "custom-Function TP: host cost per all-reduce far "
                                                         "above the bench's",
    ("ref-pp2-interleaved", ("cluster.gpus=4", "parallelism.pp=4")): _MP,
}


def load_rows(files=FILES) -> list[dict]:
    rows = []
    for name in files:
        for line in (DATA / name).read_text().splitlines():
            if not line.strip():
                continue
            r = json.loads(line)
            if r.get("kind") != "train_step" or r.get("status") != "ok":
                continue
            rows.append({"file": name, "run_id": r.get("run_id"), "scenario": r["scenario"], "overrides": list(r["overrides"]),
                         "gpus": r["world_size"], "measured_s": float(r["step_time_s"])})
    return rows


ROWS = load_rows()
GB_ROWS = load_rows((GPU_BOUND,))
_CACHE: dict = {}


def key(row) -> tuple:
    return row["scenario"], tuple(sorted(row["overrides"]))


def predict(row) -> dict[str, float]:
    k = key(row)
    if k not in _CACHE:
        sc = load_model(Scenario, ROOT / "scenarios" / f"{row['scenario']}.yaml", row["overrides"])
        _CACHE[k] = {f: run_scenario(sc, fidelity=f).step_time_s for f in ("analytical", "flow")}
    return _CACHE[k]


def _id(row) -> str:
    return row["scenario"] + ("[" + ",".join(key(row)[1]) + "]")


def test_every_reference_configuration_is_measured():
    names = {r["scenario"] for r in ROWS}
    expected = {p.stem for p in (ROOT / "scenarios").glob("ref-*.yaml")}
    assert expected <= names
    assert len(ROWS) == 12


@pytest.mark.parametrize("row", [pytest.param(r, marks=pytest.mark.xfail(reason=KNOWN_MISS[key(r)], strict=True))
                                 if key(r) in KNOWN_MISS else r for r in ROWS], ids=[_id(r) for r in ROWS])
def test_real_gpu_step_time_within_10_percent(row):
    p = predict(row)
    for fid, t in p.items():
        assert t == pytest.approx(row["measured_s"], rel=TOL), (fid, t, row["measured_s"])


def test_gpu_bound_reference_set_is_complete():
    """Every parallel layout of the reference script on 1-2 H200, and the H100, in the GPU-bound set."""
    got = {(r["scenario"], r["gpus"], any("dgx-h100" in o for o in r["overrides"])) for r in GB_ROWS}
    for name in ("ref-single", "ref-ddp2", "ref-fsdp2", "ref-tp2", "ref-pp2-gpipe", "ref-pp2-1f1b",
                 "ref-pp2-interleaved"):
        assert any(g[0] == name and not g[2] for g in got), name
    assert ("ref-single", 1, True) in got
    assert len(GB_ROWS) >= 30


@pytest.mark.parametrize("row", GB_ROWS, ids=[r["run_id"] for r in GB_ROWS])
def test_gpu_bound_step_time_within_10_percent(row):
    p = predict(row)
    for fid, t in p.items():
        assert t == pytest.approx(row["measured_s"], rel=TOL), (fid, t, row["measured_s"])
    assert p["flow"] == pytest.approx(p["analytical"], rel=0.01)


@pytest.mark.parametrize("row", ROWS, ids=[_id(r) for r in ROWS])
def test_real_gpu_regression_guard(row):
    """Every row inside the guard band, and flow equal to analytical (these runs have no contention)."""
    p = predict(row)
    assert p["analytical"] == pytest.approx(row["measured_s"], rel=GUARD)
    assert p["flow"] == pytest.approx(p["analytical"], rel=0.01)


VIEW_OPS = {"view", "t", "transpose", "_unsafe_view", "detach", "split_with_sizes", "slice", "expand",
            "alias", "as_strided", "unsqueeze", "squeeze", "reshape", "permute"}


def test_layer_kernel_counts_match_the_reference_program():
    """The calls the simulator charges per layer are the kernel-launching aten ops of train_gpt.py.

    Traces one block of ``calibrate/train_gpt.py`` (CPU, tiny dimensions, same code path) with a
    dispatch mode: forward 10 kernel ops; backward 21 (with gradients already present, as for every
    micro-batch after the first: 6 ``add_`` of gradient accumulation). On CUDA the LayerNorm backward
    is 2 kernels and the flash backward 3, so 10 + 25 = 35 kernels, which is what the layer units
    carry.
    """
    torch = pytest.importorskip("torch")
    import sys
    from collections import Counter

    from torch.utils._python_dispatch import TorchDispatchMode

    sys.path.insert(0, str(ROOT / "calibrate"))
    import train_gpt

    sc = load_model(Scenario, ROOT / "scenarios" / "ref-single.yaml",
                    ["model.layers=1", "model.hidden=64", "model.heads=4", "model.ffn_hidden=256",
                     "model.vocab=128", "model.seq_len=32"])
    torch.manual_seed(0)
    block = train_gpt.Block(sc.model, 1, None, False).to(torch.bfloat16)

    class Count(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.c = Counter()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.c[func.overloadpacket.__name__] += 1
            return func(*args, **(kwargs or {}))

    x = torch.randn(1, 32, 64, dtype=torch.bfloat16, requires_grad=True)
    g = torch.ones(1, 32, 64, dtype=torch.bfloat16)
    torch.autograd.backward(block(x), g)  # first micro-batch: gradients created
    x.grad = None  # the block input of the real model is no leaf: no accumulation into it
    with Count() as f:
        y = block(x)
    with Count() as b:
        torch.autograd.backward(y, g)
    kern = lambda c: sum(n for k, n in c.items() if k not in VIEW_OPS)  # noqa: E731
    assert kern(f.c) == 10, f.c
    assert kern(b.c) == 21, b.c
    assert b.c["add_"] == 6 and b.c["mm"] == 8 and b.c["native_layer_norm_backward"] == 2

    from clustersim.simulate.resolve import resolve_scenario
    from clustersim.workload.compute import ComputeModel
    from clustersim.workload.transformer import TransformerStep

    rs = resolve_scenario(ROOT / "scenarios" / "ref-single.yaml")
    step = TransformerStep(rs.scenario, ComputeModel.from_profile(rs.profile.compute, rs.cluster.gpu_spec))
    (lf, lb, _), _, _ = step.units
    assert sum(s.kernels for s in lf.segments) == 10
    later = step.with_gradient_work(lb, 1)  # a micro-batch after the first
    assert sum(s.kernels for s in later.segments) == 21 + 1 * 2 + 2  # LN backward x2 kernels, flash bwd 3


# Blind set 6 (issue 14, 2-GPU overheads): 16 runs on 2x H100 80GB HBM3 (NV18, one host), 2026-11-26
# (calibrate/raw/blind6). Predicted and committed before measuring (calibrate/raw/blind6/predictions.json);
# the overlap slowdown and the H100 2-rank collective entries were added after seeing them, so these
# rows test the model now, they are no longer blind (docs/validation.md section 6c).
BLIND6 = "blind6-train_steps.jsonl"
B6_ROWS = load_rows((BLIND6,))
B6 = {r["run_id"].removesuffix("-h100"): r for r in B6_ROWS}
ISSUE_TOL = 0.05  # issue 14: "DDP/FSDP/interleaved step times within 5% each"
_FSDP_MISS = ("FSDP2 on 2 H100, gv (seq 4096, 16 layers): measured overhead over one GPU +103 ms, the model "
              "(copies, all-gather/reduce-scatter chain, overlap slowdown, the measured FSDP2 hook host time of "
              "dgx-h100, which this GPU-bound step hides) gives under half")
# b2-fsdp2 (-3.0%) is inside 5% since the FSDP2 hook host time (profile host.fsdp_hook_us, section 6d)
B6_MISS_10 = {"gv-fsdp2": _FSDP_MISS}
B6_MISS_5 = {"gv-fsdp2": _FSDP_MISS}
B6_ISSUE_ROWS = [n for n in B6 if n.split("-", 1)[1] in ("ddp2", "fsdp2", "pp2-interleaved")]


def _param(table, names, misses):
    """Rows ``names`` of ``table`` as test parameters, those in ``misses`` strict expected failures."""
    return [pytest.param(table[n], marks=pytest.mark.xfail(reason=misses[n], strict=True), id=n) if n in misses
            else pytest.param(table[n], id=n) for n in names]


def _within(row, tol, fidelities_agree=False):
    """Both fidelities within ``tol`` of the measured step (and within 1% of each other if asked)."""
    p = predict(row)
    for fid, t in p.items():
        assert t == pytest.approx(row["measured_s"], rel=tol), (fid, t, row["measured_s"])
    if fidelities_agree:
        assert p["flow"] == pytest.approx(p["analytical"], rel=0.01)


def _signs_match(overheads, table):
    """At both fidelities every predicted overhead of ``overheads(times)`` has the measured sign."""
    measured = overheads({n: r["measured_s"] for n, r in table.items()})
    for fid in ("analytical", "flow"):
        pred = overheads({n: predict(r)[fid] for n, r in table.items()})
        for k, v in measured.items():
            assert (pred[k] > 0) == (v > 0), (fid, k, pred[k], v)
    return measured


def test_blind6_rows_complete():
    assert len(B6_ROWS) == 16 and all("cluster.topology=dgx-h100" in r["overrides"] for r in B6_ROWS)
    assert len(B6_ISSUE_ROWS) == 10


@pytest.mark.parametrize("row", _param(B6, list(B6), B6_MISS_10))
def test_blind6_step_time_within_10_percent(row):
    _within(row, TOL, fidelities_agree=True)


@pytest.mark.parametrize("row", _param(B6, B6_ISSUE_ROWS, B6_MISS_5))
def test_blind6_two_gpu_step_time_within_5_percent(row):
    """Issue 14's bar for the 2-GPU DDP, FSDP and interleaved rows: within 5% each, both fidelities."""
    _within(row, ISSUE_TOL)


def b6_overheads(times) -> dict[str, float]:
    """Seconds of parallelism overhead: the 2-GPU step minus the one-GPU step of the same per-GPU work
    (rg, gv: the 2-GPU run has half the single run's micro-batches per rank; ac, b2: the same), and
    interleaved minus 1F1B."""
    out = {}
    for name in B6:
        shape, kind = name.split("-", 1)
        if kind in ("ddp2", "fsdp2"):
            single = times["rg-single" if shape == "ac" else f"{shape}-single"]
            out[name] = times[name] - (single / 2 if shape in ("rg", "gv") else single)
    out["interleaved-vs-1f1b"] = times["rg-pp2-interleaved"] - times["rg-pp2-1f1b"]
    return out


def test_blind6_every_overhead_has_the_measured_sign():
    """DDP and FSDP cost more than one GPU doing the same per-GPU work, interleaving beats 1F1B: the sign of
    every overhead measured on 2 H100 is the predicted one (both fidelities)."""
    measured = _signs_match(b6_overheads, B6)
    assert all(v > 0 for k, v in measured.items() if k != "interleaved-vs-1f1b") and measured["interleaved-vs-1f1b"] < 0


# Blind set 9 (issue 14, 2-GPU overheads on 2x H200): 19 runs on 2 of 4 H200 of one VM, 2026-11-26
# (calibrate/raw/blind9), predicted with the model that has the H200 FSDP2 hook per shard-group size and
# committed before measuring (calibrate/raw/blind9/predictions.json). The H200 compute/NCCL overlap table was
# measured on the same VM afterwards and is in the model now: these rows test the model, no longer blind
# (docs/validation.md section 6e).
B9_ROWS = load_rows(("blind9-train_steps.jsonl",))
B9 = {r["run_id"]: r for r in B9_ROWS}
_FSDP_H200 = ("FSDP2 on 2 H200 where the GPU work per layer is comparable to the hooks' host time: measured "
              "6.7-10.2% slower than the model; the step traces (calibrate/raw/diag8) show no host-blocking call, "
              "one rank's compute stream idle for its host and the other's waiting in NCCL kernels for it")
_FSDP_HOST = ("FSDP2 on 2 H200, host-bound in the model (the optimizer's measured host time, host.fsdp_optimizer_us, "
              "since docs/validation.md 6l): the same run took 277-347 ms on five VMs (d7) and 357-426 (w7); this VM's "
              "run is at the slow end, the model near the fast one (6l: the late rank's host, CPU-bound, varies run to run)")
B9_MISS_10 = {"w7-fsdp2": _FSDP_HOST, "d7-fsdp2": _FSDP_HOST}
B9_MISS_5 = {**{n: _FSDP_H200 for n in ("rg-fsdp2", "b2-fsdp2", "gv-fsdp2")}, "w7-fsdp2": _FSDP_HOST,
             "d7-fsdp2": _FSDP_HOST}
B9_ISSUE_ROWS = [n for n in B9 if n.split("-", 1)[1] in ("ddp2", "fsdp2", "pp2-interleaved")]
#: one-GPU baseline per shape and whether the 2-GPU run does half its micro-batches per rank
B9_BASE = {"rg": 0.5, "b2": 1.0, "gv": 0.5, "w7": 1.0, "d7": 1.0}


def test_blind9_rows_complete():
    assert len(B9_ROWS) == 19 and all("cluster.topology=dgx-h100" not in r["overrides"] for r in B9_ROWS)
    assert len(B9_ISSUE_ROWS) == 12


@pytest.mark.parametrize("row", _param(B9, list(B9), B9_MISS_10))
def test_blind9_step_time_within_10_percent(row):
    _within(row, TOL, fidelities_agree=True)


@pytest.mark.parametrize("row", _param(B9, B9_ISSUE_ROWS, B9_MISS_5))
def test_blind9_two_gpu_step_time_within_5_percent(row):
    """Issue 14's bar on 2x H200: the DDP, FSDP and interleaved rows within 5% each, both fidelities."""
    _within(row, ISSUE_TOL)


def b9_overheads(times) -> dict[str, float]:
    """The 2-GPU step minus the one-GPU step of the same per-GPU work, and interleaved minus 1F1B (rg, d7)."""
    out = {}
    for name in B9:
        shape, kind = name.split("-", 1)
        if kind in ("ddp2", "fsdp2"):
            out[name] = times[name] - B9_BASE[shape] * times[f"{shape}-single"]
    for shape in ("rg", "d7"):
        out[f"{shape}-interleaved-vs-1f1b"] = times[f"{shape}-pp2-interleaved"] - times[f"{shape}-pp2-1f1b"]
    return out


def test_blind9_every_overhead_has_the_measured_sign():
    measured = _signs_match(b9_overheads, B9)
    assert all((v > 0) == ("interleaved" not in k) for k, v in measured.items()), measured


# Blind set 8 (issue 14, 2 -> 4 GPUs): 8 runs on 4 H200 of the same VM, predicted with d92da75 and committed
# before measuring (calibrate/raw/blind8/predictions.json); the H200 FSDP2 hook and overlap table came after.
B8_ROWS = load_rows(("blind8-train_steps.jsonl",))
B8 = {r["run_id"]: r for r in B8_ROWS}
B8_MISS_10 = {
    "e8-tp4": "TP 4 with the reference program's custom-Function TP: host cost per all-reduce far above the "
              "bench's (the 4-GPU TP row of section 6a is the same known miss): -13.6%",
    "d8-fsdp4": "FSDP2 on 4 ranks of a host-bound shape (32 layers, 2 micro-batches per rank): -22.4% with the "
                "4-rank hook time of the probe; host and GPU time add up more than the model overlaps them",
}


def test_blind8_rows_complete():
    assert len(B8_ROWS) == 8 and all(r["gpus"] == 4 for r in B8_ROWS)


@pytest.mark.parametrize("row", _param(B8, list(B8), B8_MISS_10))
def test_blind8_four_gpu_step_time_within_10_percent(row):
    _within(row, TOL)


# Blind set 10 (issue 14, blind set 8's layouts on 4x H100): 8 runs, 2026-11-27, predicted with the model of
# f390647's parent and committed in f390647 before any H100 run of them (calibrate/raw/blind10/predictions.json).
B10_ROWS = load_rows(("blind10-train_steps.jsonl",))
B10 = {r["run_id"]: r for r in B10_ROWS}


def test_blind10_rows_complete():
    assert len(B10_ROWS) == 8 and all(r["gpus"] == 4 and "cluster.topology=dgx-h100" in r["overrides"]
                                      for r in B10_ROWS)


@pytest.mark.parametrize("row", _param(B10, list(B10), {}))
def test_blind10_four_gpu_h100_step_time_within_10_percent(row):
    """Every 4-GPU H100 layout within 10% (blind: -8.2% to +5.7%), both fidelities."""
    _within(row, TOL, fidelities_agree=True)


# Blind set 11 (issue 14, 2-GPU overheads on 2x H100): blind set 9's -h100 rows, 19 runs on a lent 2x H100 VM,
# 2026-11-27, predicted and committed (626c4eb) before this run (calibrate/raw/blind11/predictions.json). The same
# configurations ran on another 2x H100 VM on 2026-11-26 (blind sets 6 and 7, calibrate/raw/blind6, blind7), so this
# set is blind to the run, not to the configurations: a reproduction on a second machine.
B11_ROWS = load_rows(("blind11-train_steps.jsonl",))
B11 = {r["run_id"].removesuffix("-h100"): r for r in B11_ROWS}
_FSDP_H100 = ("FSDP2 on 2 H100, host-bound shape: the step follows the slower rank's host issue (per-rank host issue "
              "varies 4-12% step to step under FSDP2, 1-2% under DDP, calibrate/raw/blind11); the same row measured "
              "313-327 ms (rg) and 505-551 ms (b2) in six runs on two VMs (calibrate/raw/blind6, blind11, skew11)")
# rg-fsdp2 was -5.3% blind; -4.5% since the measured optimizer host and the overlap stretch's fixed point (6l)
B11_MISS_5 = {"b2-fsdp2": _FSDP_H100,
              "d7-fsdp2": _FSDP_H100 + "; d7 -8.3% since the optimizer's measured host time (6l), the six runs 309-375 ms"}
B11_ISSUE_ROWS = [n for n in B11 if n.split("-", 1)[1] in ("ddp2", "fsdp2", "pp2-interleaved")]


def test_blind11_rows_complete():
    assert len(B11_ROWS) == 19 and all("cluster.topology=dgx-h100" in r["overrides"] for r in B11_ROWS)
    assert len(B11_ISSUE_ROWS) == 12 and set(B11) == set(B9)


@pytest.mark.parametrize("row", _param(B11, list(B11), {}))
def test_blind11_step_time_within_10_percent(row):
    """Every row within 10% blind (-6.6% to +5.2%), both fidelities."""
    _within(row, TOL, fidelities_agree=True)


@pytest.mark.parametrize("row", _param(B11, B11_ISSUE_ROWS, B11_MISS_5))
def test_blind11_two_gpu_step_time_within_5_percent(row):
    """Issue 14's bar on 2 GPUs: DDP, FSDP and interleaved rows within 5% each (10 of 12 blind)."""
    _within(row, ISSUE_TOL)


def test_blind11_every_overhead_has_the_measured_sign():
    """DDP and FSDP cost time over one GPU doing the same per-GPU work; interleaving is faster than 1F1B here
    (rg: 341.3 vs 353.8 ms; d7: 238.8 vs 243.8 ms), as the model has it."""
    measured = _signs_match(b9_overheads, B11)
    assert all((v > 0) == ("interleaved" not in k) for k, v in measured.items()), measured


# Blind set 12 (issue 14, four GPUs): blind sets 6/7's shapes b2, gv, w7, d7 on 4 GPUs of a lent 4x H100 VM (never run
# on 4 GPUs here), 2026-11-27, predicted and committed (26bdd3c) before the run (calibrate/raw/blind12/predictions.json).
B12_ROWS = load_rows(("blind12-train_steps.jsonl",))
B12 = {r["run_id"].removesuffix("-h100"): r for r in B12_ROWS}
B12_MISS_10 = {
    "w7-fsdp4": ("FSDP2 on 4 H100, host-bound: dgx-h100's FSDP2 hook time is the 2-rank probe's of another VM (no "
                 "4-rank H100 probe); this VM's host issued the step in 278-294 ms per rank (calibrate/raw/blind12), "
                 "the model charges more (+16.0% blind)"),
}
# d7-single was +5.3% blind (this VM's H100s ran every one-GPU row 3.9-5.3% faster than the profile; blind set 11's VM:
# -0.2% to +3.5% on the same shapes); +4.8% since the norms are read at their row length (docs/calibration.md)
B12_MISS_5 = dict(B12_MISS_10)


def test_blind12_rows_complete():
    assert len(B12_ROWS) == 14 and all("cluster.topology=dgx-h100" in r["overrides"] for r in B12_ROWS)
    assert sum(r["gpus"] == 4 for r in B12_ROWS) == 10


@pytest.mark.parametrize("row", _param(B12, list(B12), B12_MISS_10))
def test_blind12_step_time_within_10_percent(row):
    """13 of 14 rows within 10% blind (d7-pp4-interleaved -9.2%; +0.9% since torch's exact lowering, validation 6i),
    both fidelities."""
    _within(row, TOL, fidelities_agree=True)


@pytest.mark.parametrize("row", _param(B12, list(B12), B12_MISS_5))
def test_blind12_step_time_within_5_percent(row):
    """10 of 14 within 5% blind, 13 with the current model (d7 1F1B +5.5% -> +1.7%, d7 interleaved -9.2% -> +0.9%,
    d7 one GPU +5.3% -> +4.8%): every DDP row, b2/gv FSDP2, every pipeline row, the four one-GPU rows."""
    _within(row, ISSUE_TOL)


# Blind set 13 (issue 14, pipelines): nine configurations never run here, on a lent 4x H200 VM, 2026-11-27, predicted with
# the model of docs/validation.md 6i (torch's p2p program, waiting kernels, the clock window) and committed (cb07982)
# before the run (calibrate/raw/blind13/predictions.json).
B13_ROWS = load_rows(("blind13-train_steps.jsonl",))
B13 = {r["run_id"]: r for r in B13_ROWS}
B13_MISS_5 = {"p13-gv-pp4-1f1b": "PP 4 1F1B at seq 4096 (gv): +5.8% blind; the 2-GPU 1F1B rows of this set are +2.3% to +3.2%"}


def test_blind13_rows_complete():
    assert len(B13_ROWS) == 9 and all("pp2" in r["scenario"] for r in B13_ROWS)


@pytest.mark.parametrize("row", _param(B13, list(B13), {}))
def test_blind13_pipeline_step_time_within_10_percent(row):
    """Every row within 10% blind (-2.0% to +5.8%), both fidelities."""
    _within(row, TOL, fidelities_agree=True)


@pytest.mark.parametrize("row", _param(B13, list(B13), B13_MISS_5))
def test_blind13_pipeline_step_time_within_5_percent(row):
    """8 of 9 within 5% blind; every interleaved row (2 GPUs: +1.1% to +1.3%; 4 GPUs, 16 micro-batches: -2.0%)."""
    _within(row, ISSUE_TOL)


# Blind set 14 (issue 14, 4-GPU interleaved pipelines, 3 and 4 chunks per rank): never run here, on a lent 4x H200 VM,
# 2026-11-27, predicted with the model after torch's exact lowering (docs/validation.md 6i) and committed (f0c216c)
# before the run (calibrate/raw/blind14/predictions.json).
B14_ROWS = load_rows(("blind14-train_steps.jsonl",))
B14 = {r["run_id"]: r for r in B14_ROWS}


def test_blind14_rows_complete():
    assert len(B14_ROWS) == 4 and all(r["gpus"] == 4 and "interleaved" in r["scenario"] for r in B14_ROWS)


@pytest.mark.parametrize("row", _param(B14, list(B14), {}))
def test_blind14_interleaved_step_time_within_5_percent(row):
    """Every row within 5% blind (-0.5% to +3.1%), both fidelities."""
    _within(row, ISSUE_TOL, fidelities_agree=True)


# Blind set 15 (issue 14, memory-driven shapes: FSDP2 with a 128k vocabulary and at h 4096, interleaved v4 x 16
# micro-batches, 1F1B x 12 at seq 4096): never run here, on a lent 2x H100 VM, 2026-11-27, predicted with main 3f2dca1
# and committed (e756f67) before the run (calibrate/raw/blind15/predictions.json).
# The same four H200 rows (no suffix) on a lent 2x H200 VM the same hour, from the same committed predictions.
B15_ROWS = load_rows(("blind15-train_steps.jsonl", "blind15-h200-train_steps.jsonl"))
B15 = {r["run_id"]: r for r in B15_ROWS}
# f15-fsdp2-v128k (H200) was +7.8% blind; +2.3% since the optimizer's measured host time (docs/validation.md 6l)
B15_MISS_5: dict = {}


def test_blind15_rows_complete():
    assert len(B15_ROWS) == 8 and all(r["gpus"] == 2 for r in B15_ROWS)


@pytest.mark.parametrize("row", _param(B15, list(B15), {}))
def test_blind15_step_time_within_10_percent(row):
    """Every row within 10% blind (-4.2% to +7.8%), both fidelities."""
    _within(row, TOL, fidelities_agree=True)


@pytest.mark.parametrize("row", _param(B15, list(B15), B15_MISS_5))
def test_blind15_step_time_within_5_percent(row):
    """7 of 8 within 5% blind (H100: FSDP2 +1.9% and -4.2%, interleaved -1.9%, 1F1B +2.1%; H200: FSDP2 -4.0%,
    interleaved -1.4%, 1F1B +2.2%)."""
    _within(row, ISSUE_TOL, fidelities_agree=True)


# Blind set 16 (issue 14, the memory model on 4 GPUs: FSDP2 dp 4 at h 4096 and with a 128k vocabulary, interleaved PP 4
# v3 x 12, 1F1B PP 4 at seq 4096, PP 2 x DP 2 interleaved): never run here, on a lent 4x H100 VM, 2026-11-27, predicted
# with main 525bdad and committed (968154f) before the run (calibrate/raw/blind16/predictions.json).
B16_ROWS = load_rows(("blind16-train_steps.jsonl",))
B16 = {r["run_id"]: r for r in B16_ROWS}
_B16_FSDP = ("FSDP2 on 4 ranks, blind: the model's FSDP2 step is fast on GPU-heavier shapes (docs/validation.md 2e: "
             "the waiting collectives and the ranks' own pace are not modelled)")
B16_MISS_10 = {"f16-fsdp4-v128k-h100": _B16_FSDP + "; -7.6% blind, -10.7% since the optimizer's measured host time "
                                      "(6l: the model's old optimizer charge, 3-5x the measured, had hidden part of it)"}
B16_MISS_5 = {"f16-fsdp4-h4096-h100": _B16_FSDP + "; -9.4%", **B16_MISS_10}


def test_blind16_rows_complete():
    assert len(B16_ROWS) == 5 and all(r["gpus"] == 4 for r in B16_ROWS)


@pytest.mark.parametrize("row", _param(B16, list(B16), B16_MISS_10))
def test_blind16_step_time_within_10_percent(row):
    """Every row within 10% blind (-9.4% to +2.6%), both fidelities."""
    _within(row, TOL, fidelities_agree=True)


@pytest.mark.parametrize("row", _param(B16, list(B16), B16_MISS_5))
def test_blind16_step_time_within_5_percent(row):
    """The three pipeline rows within 5% blind (+0.2%, +2.6%, +0.5%); the two FSDP2 rows are known misses."""
    _within(row, ISSUE_TOL, fidelities_agree=True)


# Blind set 17 (issue 14, FSDP2 after docs/validation.md 6l): six shapes never run here on a lent 2x H200 VM, 2026-11-27,
# predicted with the model of 6l and committed (5956d53) before the run (calibrate/raw/blind17/predictions.json).
B17_ROWS = load_rows(("blind17-train_steps.jsonl",))
B17 = {r["run_id"]: r for r in B17_ROWS}
_B17_HOST = ("FSDP2 on 2x H200, blind: the slower rank's forward and backward host was 6-26% above the model's on this "
             "VM (benchmarks/fsdp_host.py; the hook time is the host probe's median, 6l), the host's speed varying "
             "between runs and VMs (6l): ")
B17_MISS_10 = {"f17-fsdp2-llama": _B17_HOST + "-16.3%", "f17-fsdp2-l48-host": _B17_HOST + "-12.0%",
               "f17-fsdp2-h1536": _B17_HOST + "-20.3%"}
B17_MISS_5 = {**B17_MISS_10,
              "f17-fsdp2-wide": "FSDP2, GPU-bound (host 189 of 245 ms): -5.5% blind, the GPU-heavier FSDP2 deficit of 2e/6e",
              "f17-ddp2-llama": "DDP on this VM -5.6% blind (its one-GPU baseline -3.1%; DDP rows of sets 9 and 11 within 2.1%)"}


def test_blind17_rows_complete():
    assert len(B17_ROWS) == 6 and all("cluster.topology=dgx-h100" not in r["overrides"] for r in B17_ROWS)


@pytest.mark.parametrize("row", _param(B17, list(B17), B17_MISS_10))
def test_blind17_step_time_within_10_percent(row):
    """3 of 6 within 10% blind (one GPU -3.1%, DDP -5.6%, wide FSDP2 -5.5%), both fidelities."""
    _within(row, TOL, fidelities_agree=True)


@pytest.mark.parametrize("row", _param(B17, list(B17), B17_MISS_5))
def test_blind17_step_time_within_5_percent(row):
    """1 of 6 within 5% blind (the one-GPU baseline)."""
    _within(row, ISSUE_TOL, fidelities_agree=True)


# The same six configurations on a second fresh 2x H200 VM the same hour, against the same committed predictions
# (calibrate/raw/blind17-b): the FSDP2 h 1536 row ran 207.8 ms here and 274.2 on the first VM.
B17B_ROWS = load_rows(("blind17b-train_steps.jsonl",))
B17B = {r["run_id"]: r for r in B17B_ROWS}


@pytest.mark.parametrize("row", _param(B17B, list(B17B), {}))
def test_blind17_second_vm_step_time_within_10_percent(row):
    """6 of 6 within 10% blind on the second VM (-9.5% to +5.2%), both fidelities."""
    _within(row, TOL, fidelities_agree=True)


# Blind set 18 (issue 14, docs/validation.md 6o): six new 2-GPU shapes, each run twice on one 2x H200 VM, 2026-11-27;
# predicted with their `run --band` bands (the host speed band of 6n) and committed (b7bac0c) before the runs
# (calibrate/raw/blind18/predictions.json).
B18_ROWS = load_rows(("blind18-train_steps.jsonl",))
B18 = {r["run_id"]: r for r in B18_ROWS}
_B18_DDP = ("host-bound DDP (24 layers of h 512, 2 ranks): the model's host per kernel call is the multi-process "
            "cost of the reference set's known miss (ref-ddp2, 6a/6b), 25-33% short, beyond the host band: ")
B18_OUT_OF_BAND = {"f18-ddp2-host-r1": _B18_DDP + "89.7 ms against 47.4-77.1", "f18-ddp2-host-r2": _B18_DDP + "80.5 ms"}
B18_MISS_10 = {**B18_OUT_OF_BAND,
               "f18-pp2-1f1b-host-r2": "host-bound 1F1B, its second run 14% slower than its first (106.6 / 121.3 ms, "
                                       "a rank's probe 5.59 us against 3.34-3.47): -12.5%",
               "f18-fsdp2-h1024-r2": "FSDP2 h 1024, its second run 14% faster than its first (154.3 / 133.3 ms): +12.9%",
               "f18-fsdp2-llama-r1": "Llama-style FSDP2, both ranks' probes 6.2-6.3 us in this run (3.4 / 5.3 in the "
                                     "second, 144.8 ms): -20.4%",
               "f18-fsdp2-wide-r1": "the wide FSDP2 row, probes 5.8-6.0 us in this run (72.8 ms in the second): -17.4%"}


def test_blind18_rows_complete():
    assert sorted(B18) == sorted(f"{n}-r{k}" for n in ("f18-fsdp2-l40-host", "f18-ddp2-host", "f18-pp2-1f1b-host",
                                                      "f18-fsdp2-h1024", "f18-fsdp2-llama", "f18-fsdp2-wide")
                                 for k in (1, 2))


#: the bands as committed before the runs (calibrate/raw/blind18/predictions.json: host.speed_band 1.275 then, from 16
#: probe runs; 1.231 since, from 22)
B18_PRED = json.loads((DATA / "blind18-predictions.json").read_text())


@pytest.mark.parametrize("row", _param(B18, sorted(B18), B18_OUT_OF_BAND))
def test_blind18_run_inside_its_committed_band(row):
    """10 of 12 runs inside the band `run --band` gave before them (analytical), for the configuration it was made for."""
    pred = B18_PRED[row["run_id"].rsplit("-r", 1)[0]]
    assert (pred["scenario"], pred["overrides"]) == (f"scenarios/{row['scenario']}.yaml", row["overrides"])
    lo, hi = pred["predicted_band_s"]["analytical"]
    assert lo <= row["measured_s"] <= hi, (lo, row["measured_s"], hi)


@pytest.mark.parametrize("row", _param(B18, sorted(B18), B18_MISS_10))
def test_blind18_step_time_within_10_percent(row):
    """6 of 12 runs within 10% blind (both fidelities): the same configuration ran 11-18% apart between its two runs."""
    _within(row, TOL, fidelities_agree=True)


# Host probe 19 (docs/validation.md 6p): host-bound work on one process and on two under DDP, alternated over two rounds
# on one 2x H200 VM (calibrate/raw/host19), predictions committed before.
H19 = {r["run_id"]: r for r in load_rows(("host19-train_steps.jsonl",))}


def test_host19_ddp_overhead_over_one_process():
    """DDP's step over one process doing the same per-GPU work: measured +10.6 and +8.5 ms in the two rounds, the
    model +9.0 (within 25% of each, the sign right), while the one-process level ran 6-15% above the model with the VM's
    host."""
    single, ddp = predict(H19["m19-single-host-r1"]), predict(H19["m19-ddp2-host-r1"])
    for fid in ("analytical", "flow"):
        model = ddp[fid] - single[fid]
        for k in (1, 2):
            measured = H19[f"m19-ddp2-host-r{k}"]["measured_s"] - H19[f"m19-single-host-r{k}"]["measured_s"]
            assert model > 0 and measured > 0
            assert model == pytest.approx(measured, rel=0.25), (fid, k, model, measured)


# FSDP2 across VMs (issue 14, docs/validation.md 6l): blind set 9's 2-GPU FSDP2 configurations and the host probe on
# five 2x H200 VMs (A: blind set 9 and host8, 2026-11-26; B: host9; C: fsdp16; D: hostcpu17-h200; E: hostcpu17-h200b,
# 2026-11-27). A host-bound FSDP2 step follows the slower rank's host, whose speed changes from run to run (6l): the
# same configuration spans more than the issue's 5% over these runs, so each is checked against its runs' range.
VM_FILES = {"A": ("blind9-train_steps.jsonl", "host8-train_steps.jsonl"), "B": ("host9-train_steps.jsonl",),
            "C": ("fsdp16-train_steps.jsonl",), "D": ("hostcpu17-h200-train_steps.jsonl",),
            "E": ("hostcpu17-h200b-train_steps.jsonl",)}
VM_ROWS = ("rg-fsdp2", "gv-fsdp2", "w7-fsdp2", "d7-fsdp2", "h7-fsdp2")


def vm_runs() -> dict[str, dict[str, dict]]:
    """``{configuration: {VM: row}}`` of the FSDP2 rows of :data:`VM_ROWS` on the VMs of :data:`VM_FILES`."""
    out: dict[str, dict[str, dict]] = {}
    for vm, files in VM_FILES.items():
        for r in load_rows(files):
            if r["run_id"] in VM_ROWS:
                out.setdefault(r["run_id"], {})[vm] = r
    return out


VM_RUNS = vm_runs()


def test_fsdp2_vm_runs_complete():
    assert {k: len(v) for k, v in VM_RUNS.items()} == {"rg-fsdp2": 4, "gv-fsdp2": 4, "w7-fsdp2": 5, "d7-fsdp2": 5,
                                                      "h7-fsdp2": 5}
    # the runs of one configuration span more than the issue's 5% bar (d7: 277-347 ms, w7: 357-426 ms)
    spans = {k: max(r["measured_s"] for r in v.values()) / min(r["measured_s"] for r in v.values()) - 1
             for k, v in VM_RUNS.items()}
    assert spans["d7-fsdp2"] > 0.2 and spans["w7-fsdp2"] > 0.15 and spans["h7-fsdp2"] > 0.2, spans


@pytest.mark.parametrize("name", VM_ROWS)
def test_fsdp2_model_within_the_range_of_its_runs_on_five_h200_vms(name):
    """Both fidelities within the range of the configuration's runs on the five VMs, widened by 5%."""
    runs = [r["measured_s"] for r in VM_RUNS[name].values()]
    row = next(iter(VM_RUNS[name].values()))
    for fid, t in predict(row).items():
        assert 0.95 * min(runs) <= t <= 1.05 * max(runs), (fid, t, sorted(runs))


def vm_table() -> str:
    """The FSDP2 rows of :data:`VM_ROWS` on the five H200 VMs, ms, with the model (flow) and its error against the
    median of the runs."""
    out = ["| run | " + " | ".join(VM_FILES) + " | median | model | vs median |", "|---" * (len(VM_FILES) + 4) + "|"]
    for name in VM_ROWS:
        runs = VM_RUNS[name]
        ms = sorted(r["measured_s"] for r in runs.values())
        med = ms[len(ms) // 2] if len(ms) % 2 else (ms[len(ms) // 2 - 1] + ms[len(ms) // 2]) / 2
        t = predict(next(iter(runs.values())))["flow"]
        cells = " | ".join(f"{runs[vm]['measured_s'] * 1e3:.1f}" if vm in runs else "-" for vm in VM_FILES)
        out.append(f"| {name} | {cells} | {med * 1e3:.1f} | {t * 1e3:.1f} | {100 * (t / med - 1):+.1f}% |")
    return "\n".join(out)


def _cpu_rows():
    rows = []
    for name in ("hostcpu17-h100-train_steps.jsonl", "hostcpu17-h200-train_steps.jsonl", "hostcpu17-h200b-train_steps.jsonl"):
        rows += [json.loads(line) for line in (DATA / name).read_text().splitlines() if line.strip()]
    return [r for r in rows if "fsdp" in r["scenario"]]


def test_fsdp2_host_computes_the_whole_step():
    """Every FSDP2 rank's process held a CPU for its whole host issue (process CPU seconds / issue seconds
    0.98-1.05, median over the steps) and was almost never preempted (< 2 involuntary switches of the main
    thread per step): the slower rank's host is slow, not waiting (docs/validation.md 6l)."""
    rows = _cpu_rows()
    assert len(rows) == 19
    for r in rows:
        f = r["host_cpu_fields"]
        for issue, steps in zip(r["host_issue_s_ranks"], r["host_cpu_ranks"]):
            ratio = sorted(s[f.index("process_cpu_s")] / i for s, i in zip(steps, issue))[len(issue) // 2]
            assert 0.98 <= ratio <= 1.05, (r["run_id"], ratio)
            assert max(s[f.index("main_involuntary_switches")] for s in steps) < 2 * len(steps), r["run_id"]


#: hostprobe18_x2.sh on one 2x H200 VM, six rounds (docs/validation.md 6n): the rows of its second call and the
#: summary its first call printed (that call's rows did not come back)
PROBE_FILES = ("hostprobe18-h200-train_steps.jsonl", "hostprobe18-h200-first-call-summary.txt")


def _probe_rows(jsonl_files) -> list[tuple[str, float, list[float], list[float]]]:
    """(run id, step s, each rank's median host issue s, each rank's median CPU-dispatch probe us) of every run in the
    ``jsonl_files`` and in the first call's printed summary (:data:`PROBE_FILES`)."""
    out = []
    for name in jsonl_files:
        for line in (DATA / name).read_text().splitlines():
            r = json.loads(line)
            out.append((r["run_id"], r["step_time_s"], [float(np.median(x)) for x in r["host_issue_s_ranks"]],
                        [float(np.median([s[0] for s in steps])) for steps in r["host_probe_ranks"]]))
    for line in (DATA / PROBE_FILES[1]).read_text().splitlines():
        if line.startswith(("#", "run")) or not line.strip():
            continue
        head, *cells = line.split("|")
        rid, step = head.split()
        out.append((rid, float(step) / 1e3, [float(c.split()[0]) / 1e3 for c in cells],
                    [float(c.split()[1]) for c in cells]))
    return out


def probe_runs() -> dict[str, list[tuple[float, float]]]:
    """``{configuration: [(step s, slower host's probe us), ...]}`` of the first probe VM: each run's step and the
    largest of its ranks' median CPU-dispatch probe (``host_probe_ranks``)."""
    out: dict[str, list[tuple[float, float]]] = {}
    for rid, step, _, probes in _probe_rows(PROBE_FILES[:1]):
        out.setdefault(rid.rsplit("-r", 1)[0], []).append((step, max(probes)))
    return out


PROBE_RUNS = probe_runs()


def test_host_bound_fsdp2_steps_follow_the_host_speed_probe():
    """On one VM, six runs each: the host-bound FSDP2 steps rise with the slower rank's probe (the same CPU work
    taking 2.8-5.7 us, the GPU idle), the GPU-bound DDP step does not move although its hosts slowed as much."""
    assert {k: len(v) for k, v in PROBE_RUNS.items()} == {k: 6 for k in ("h7-fsdp2", "d7-fsdp2", "w7-fsdp2",
                                                                          "rg-ddp2", "f17-fsdp2-h1536")}
    for name in ("h7-fsdp2", "d7-fsdp2", "f17-fsdp2-h1536"):
        steps, probes = zip(*PROBE_RUNS[name])
        assert np.corrcoef(steps, probes)[0, 1] > 0.8, name
        assert max(steps) / min(steps) > 1.3, name
    steps, probes = zip(*PROBE_RUNS["rg-ddp2"])
    assert max(steps) / min(steps) < 1.01 and max(probes) / min(probes) > 1.4


def _rank_medians() -> list[tuple[str, list[float], list[float]]]:
    """(run id, each rank's median host issue s, each rank's median CPU-dispatch probe us) of every FSDP2 run of the
    two probe VMs (the first call's summary included)."""
    rows = _probe_rows((PROBE_FILES[0], "hostprobe18-h200b-train_steps.jsonl"))
    return [(rid, issue, probes) for rid, _, issue, probes in rows if "fsdp" in rid]


def test_within_a_run_the_rank_with_the_slower_cpu_issues_longer():
    """Where the two ranks' probes differ by more than 30% (9 FSDP2 runs on the two VMs), the rank whose CPU ran the
    fixed work slower is the rank whose host issued the step longer."""
    split = [(rid, iss, pr) for rid, iss, pr in _rank_medians() if max(pr) / min(pr) > 1.3]
    assert len(split) == 9
    for rid, iss, pr in split:
        assert int(np.argmax(pr)) == int(np.argmax(iss)), (rid, iss, pr)


def test_gpu_bound_ddp_step_ignores_the_host_speed_on_the_second_vm():
    rows = [json.loads(x) for x in (DATA / "hostprobe18-h200b-train_steps.jsonl").read_text().splitlines()]
    ddp = [r for r in rows if r["run_id"].startswith("rg-ddp2")]
    steps = [r["step_time_s"] for r in ddp]
    probes = [max(np.median([s[0] for s in st]) for st in r["host_probe_ranks"]) for r in ddp]
    assert len(ddp) == 3 and max(steps) / min(steps) < 1.01 and max(probes) / min(probes) > 1.4


@pytest.mark.parametrize("name", ("h7-fsdp2", "d7-fsdp2", "w7-fsdp2", "f17-fsdp2-h1536"))
def test_fsdp2_model_within_the_range_of_its_runs_on_one_vm(name):
    """Both fidelities within the range of the configuration's six runs on the probe VM, widened by 5%."""
    runs = [t for t, _ in PROBE_RUNS[name]]
    files = {"h7-fsdp2": "host7_configs.txt", "f17-fsdp2-h1536": "blind17_configs.txt"}.get(name, "blind9_configs.txt")
    line = next(x.split() for x in (ROOT / "calibrate" / files).read_text().splitlines() if x.split()[:1] == [name])
    row = {"scenario": Path(line[1]).stem, "overrides": line[2:]}
    for fid, t in predict(row).items():
        assert 0.95 * min(runs) <= t <= 1.05 * max(runs), (fid, t, sorted(runs))


#: every 2-rank FSDP2 run on 2x H200 VMs in the data (the reference set of 6a, blind sets 9, 15, 17 twice; the host
#: studies of 6e, 6l, 6n)
H200_FSDP2_FILES = ("h200x2-train_steps.jsonl", "blind9-train_steps.jsonl", "host8-train_steps.jsonl", "host9-train_steps.jsonl",
                    "fsdp16-train_steps.jsonl", "hostcpu17-h200-train_steps.jsonl", "hostcpu17-h200b-train_steps.jsonl",
                    "hostprobe18-h200-train_steps.jsonl", "hostprobe18-h200b-train_steps.jsonl",
                    "hostprobe18-h200c-train_steps.jsonl",
                    "blind17-train_steps.jsonl", "blind17b-train_steps.jsonl", "blind15-h200-train_steps.jsonl")


def test_run_band_covers_the_fsdp2_runs_on_h200():
    """`run --band` with hgx-h200's host speed band (6n) holds 63 of the 73 2-rank FSDP2 runs of every 2x H200 VM
    here. Outside: seven runs of GPU-bound rows the model has 4-7% fast (rg-fsdp2 four times, gv-fsdp2 once, the wide
    8-layer row twice: a GPU-bound step's band does not widen), h1536's fastest and slowest runs (146.3, 274.2 ms) and
    one run of the probe program at the band's edge (353.3 ms against 353.2)."""
    from clustersim.simulate.band import step_time_band
    from clustersim.simulate.resolve import resolve_scenario

    bands: dict = {}
    inside, outside = 0, []
    for name in H200_FSDP2_FILES:
        for line in (DATA / name).read_text().splitlines():
            r = json.loads(line)
            if r.get("status") != "ok" or "fsdp" not in r["scenario"] or r["world_size"] != 2 or "H200" not in r["gpu"]:
                continue
            k = (r["scenario"], tuple(r["overrides"]))
            if k not in bands:
                bands[k] = step_time_band(resolve_scenario(ROOT / "scenarios" / f"{r['scenario']}.yaml", r["overrides"]),
                                          fidelity="analytical")
            lo, hi = bands[k]
            if lo <= r["step_time_s"] <= hi:
                inside += 1
            else:
                outside.append((name, r["run_id"], round(r["step_time_s"] * 1e3, 1)))
    assert inside + len(outside) == 73
    assert inside >= 63, outside


def table(rows=None) -> str:
    out = ["| config | overrides | GPUs | measured (ms) | flow (ms) | analytical (ms) | error (flow) |",
           "|---|---|---|---|---|---|---|"]
    for r in ROWS if rows is None else rows:
        p = predict(r)
        err = p["flow"] / r["measured_s"] - 1
        ov = " ".join(f"`{o}`" for o in r["overrides"])
        out.append(f"| {r['scenario']} | {ov} | {r['gpus']} | {r['measured_s'] * 1e3:.1f} | {p['flow'] * 1e3:.1f} | "
                   f"{p['analytical'] * 1e3:.1f} | {err * 100:+.1f}% |")
    return "\n".join(out)


def every_row() -> list[tuple[str, dict]]:
    """(set, row) of every GPU-bound measured row: the reference runs and blind sets 6 and 8-18."""
    sets = [("6a", GB_ROWS), ("B6", B6_ROWS), ("B8", B8_ROWS), ("B9", B9_ROWS), ("B10", B10_ROWS),
            ("B11", B11_ROWS), ("B12", B12_ROWS), ("B13", B13_ROWS), ("B14", B14_ROWS),
            ("B15", B15_ROWS), ("B16", B16_ROWS), ("B17", B17_ROWS), ("B18", B18_ROWS)]
    return [(name, r) for name, rows in sets for r in rows]


def pipeline_table() -> str:
    """Every pipeline row (pp > 1) of :func:`every_row`, and how many of all rows are within 5% and 10%."""
    out = ["| set | run | GPUs | measured ms | flow ms | error |", "|---|---|---|---|---|---|"]
    n5 = n10 = n = 0
    for name, r in every_row():
        p = predict(r)["flow"]
        err = p / r["measured_s"] - 1
        n, n5, n10 = n + 1, n5 + (abs(err) <= 0.05), n10 + (abs(err) <= 0.10)
        if "pp2" in r["scenario"] and ("pp=1" not in " ".join(r["overrides"])):
            out.append(f"| {name} | {r['run_id']} | {r['gpus']} | {r['measured_s'] * 1e3:.1f} | {p * 1e3:.1f} | "
                       f"{err * 100:+.1f}% |")
    out.append(f"\nall {n} rows: {n5} within 5%, {n10} within 10%")
    return "\n".join(out)


if __name__ == "__main__":
    import sys

    if "--pipeline" in sys.argv:  # every pipeline row of every set (docs/validation.md 6i)
        print(pipeline_table())
        raise SystemExit(0)
    if "--vms" in sys.argv:  # FSDP2 on five 2x H200 VMs (docs/validation.md 6l)
        print(vm_table())
        raise SystemExit(0)
    print("GPU-bound reference runs\n")
    print(table(GB_ROWS))
    print("\nHost-bound runs\n")
    print(table())
    print("\nBlind set 6 (2x H100; not blind since the overlap model)\n")
    print(table(B6_ROWS))
    meas = b6_overheads({n: r["measured_s"] for n, r in B6.items()})
    pred = {f: b6_overheads({n: predict(r)[f] for n, r in B6.items()}) for f in ("flow", "analytical")}
    print("\n| overhead | measured ms | predicted flow ms | predicted analytical ms |\n|---|---|---|---|")
    for k, v in meas.items():
        print(f"| {k} | {v * 1e3:+.1f} | {pred['flow'][k] * 1e3:+.1f} | {pred['analytical'][k] * 1e3:+.1f} |")
