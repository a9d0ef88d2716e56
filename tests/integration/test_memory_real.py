"""Real GPUs (issue 14, memory): predicted peak allocated vs ``torch.cuda.max_memory_allocated``.

Every ``train_step`` row with ``peak_memory_bytes`` in the measured row files of the study folders
(``tools/studies.py`` ``TRAIN_STEP_SETS``; measured by reference/train_gpt.py: the maximum over ranks, from the
reset before the warm-up steps) is predicted from its scenario file plus its ``--set`` overrides,
and must be within 5% (:func:`clustersim.workload.memory.step_memory`'s ``peak_allocated_bytes``).

reference/train_gpt.py always runs the plain PyTorch kernels (``training.kernel_fusion: none``:
no dropout, F.cross_entropy on the upcast logits, torch DDP/FSDP2/pipelining); the rows of
scenarios that do not say so (gpt-1b-ddp) are predicted with that implementation, the one measured.

Rows the model does not reach are strict expected failures with the reason, so a model change that
brings one inside 5% shows up. Run ``python tests/integration/test_memory_real.py`` for the table.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from checks import assert_close

from clustersim.simulate.run import resolve_scenario
from clustersim.workload.compute import ComputeModel
from clustersim.workload.memory import DTYPE_BYTES, state_bytes_per_param
from clustersim.workload.transformer import TransformerStep

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import studies  # noqa: E402  (tools/studies.py: every measured row file by its set name)

#: (set name, file) of every measured train_step row file, in the order the pool was collected
FILES = studies.train_step_sets()
SET_FILE = dict(FILES)
TOL = 0.05
GIB = 2**30  # the failure messages give GiB
IMPLEMENTATION = ["training.kernel_fusion=none"]

def _key(r: dict) -> tuple:
    return r["scenario_file"], tuple(sorted(r["overrides"])), "force-ddp" in json.dumps(r.get("implementation"))


#: sets that repeat configurations measured before (their rows are tested too, keyed ``run_id@set``)
REPEAT_SETS = ("blind11", "skew11", "ddp-transient")


def load_rows() -> list[dict]:
    """Distinct measured configurations (scenario file, overrides, force-ddp), first row of each; the
    first row of each in every set of :data:`REPEAT_SETS` as well."""
    rows: dict = {}
    for name, f in FILES:
        for line in f.read_text().splitlines():
            if not line.strip():
                continue
            r = json.loads(line)
            if r.get("kind") != "train_step" or r.get("status") != "ok" or not r.get("peak_memory_bytes"):
                continue
            if "scenario_file" not in r:
                # rebuilt from a log's summary line (validation/blind6-2gpu-overheads_h100x2_2026-11-26): its configuration is in
                # validation/blind6-2gpu-overheads_h100x2_2026-11-26/configs.txt, and validation/blind6-2gpu-overheads_h100x2_2026-11-26/train_steps-rows.jsonl carries it
                continue
            # the 2x H100 repeats of 2026-11-27 (blind set 11, the skew diagnosis) re-measure configurations of
            # blind sets 6 and 7 on another VM: kept beside the first measurement, not instead of it
            again = name if name in REPEAT_SETS else ""
            rows.setdefault((_key(r), again), {**r, "source": f"{name}/{f.name}"})
    return list(rows.values())


ROWS = load_rows()


def _step(row: dict, extra: list[str] | None = None) -> tuple:
    """(resolved scenario, TransformerStep) of ``row``'s scenario and overrides with the script's kernels."""
    # rows that set kernel_fusion=fused themselves ran compiled blocks (reference/train_gpt.py since 2026-12-02)
    impl = [] if "training.kernel_fusion=fused" in row["overrides"] else IMPLEMENTATION
    rs = resolve_scenario(ROOT / row["scenario_file"], list(row["overrides"]) + impl + (extra or []))
    cm = ComputeModel.from_profile(rs.profile.compute, rs.cluster.gpu_spec, rs.scenario.training.precision.params)
    return rs, TransformerStep(rs.scenario, cm)


def predict(row: dict, extra: list[str] | None = None) -> dict:
    rs, step = _step(row, extra)
    return step.memory(rs.cluster.gpu_spec.hbm_bytes)


def ddp_probe_bytes(row: dict) -> float:
    """What the one-rank ``--force-ddp`` probe runs beyond its dp=1 scenario: torch DDP's flat bucket copy of
    every gradient, the memory model's own ``ddp_buckets`` term for torch DDP (parameters x gradient bytes)."""
    _, step = _step(row)
    return step.stage_params(0) * state_bytes_per_param(step.training.precision, step.training.optimizer).grads


def predicted_peak(row: dict) -> float:
    """The model's peak allocated bytes for the program the row ran (the probe's DDP wrapper included)."""
    return predict(row)["peak_allocated_bytes"] + (ddp_probe_bytes(row) if _key(row)[2] else 0.0)


_DDP_ACCUMULATION = ("torch DDP (gradient_as_bucket_view=False): a one-time transient of the second step, one "
                     "16-bit copy of every gradient (2.6-4.0 GiB) above the steady-state peak, in some runs and not "
                     "in others of the same layout (the per-step peaks of validation/ddp-step2-transient_h200x2_2026-11-27/ddp-steps: rg-ddp2 32.60 GiB "
                     "in step 2, 29.96 in every other step; ac-ddp2 and b2-ddp2 29.96 in every step that run). "
                     "Consistent with DDP's one-time bucket rebuild after the first iteration; the model gives the "
                     "steady state (exact within 0.05 GiB on every such row)")
#: rows whose peak allocated memory the model misses (docs/validation.md 6c, 6e)
KNOWN_MEMORY_MISS = {"m19-single-host-forceddp-r1": _DDP_ACCUMULATION + " (host probe 19's one-rank DDP probe: 1.748 GiB "
                     "in step 2 of both runs, 1.511 after, the model 1.49)",
                     "ac-ddp2-h100": _DDP_ACCUMULATION, "b2-ddp2-h100": _DDP_ACCUMULATION,
                     # blind sets 8 and 9 (4x H200 VM, 2026-11-26)
                     "rg-ddp2@blind9": _DDP_ACCUMULATION, "b2-ddp2@blind9": _DDP_ACCUMULATION,
                     "e8-tp2-dp2@blind8": _DDP_ACCUMULATION,
                     # blind set 10 (4x H100 VM, 2026-11-27): the same layouts, the same 2.64 GiB above the model
                     "e8-ddp4-h100": _DDP_ACCUMULATION, "e8-tp2-dp2-h100": _DDP_ACCUMULATION,
                     # blind set 11 (2x H100 VM, 2026-11-27): 33.83 GiB in step 2, 29.03 = the model in every
                     # other step (+4.80 GiB, one 16-bit copy of 2.4B gradients); rg, b2, gv DDP without it
                     "w7-ddp2-h100@blind11": _DDP_ACCUMULATION,
                     # blind set 12 (4x H100 VM, 2026-11-27): 33.83 GiB in step 2, 29.03 (the model: 29.02) after
                     "w7-ddp4-h100": _DDP_ACCUMULATION,
                     # host probe of blind set 7 (32 layers of h 256): 0.85 GiB measured, 0.74 predicted
                     "h7-ddp2-h100": "a 0.2 GiB model under DDP: 0.10 GiB of allocations the model does not "
                                     "have (DDP's reducer state at this size is not modelled)",
                     # FP8 and MoE on one H200 (validation/fp8-moe-1gpu_h200_2026-12-02)
                     "d4-fp8-tw": "FP8 tensorwise at h 4096: 23.24 GiB measured, 22.05 modelled (the bf16 and rowwise "
                                  "runs' peak): the e4m3 casts and transposes a linear's backward holds beside its "
                                  "gradients are not in the memory model",
                     # compiled blocks (round 3): the fused layer's memory is Megatron's kernels', not what
                     # inductor saves for the backward
                     "r3-d2-compiled": "compiled blocks at h 2048: 16.98 GiB measured, 15.35 modelled (-9.6%): the fused "
                                       "layer's activation memory is Megatron's kernels', not what torch.compile saves",
                     "r3-d3-compiled": "compiled blocks at h 3072: -5.5%, as r3-d2-compiled"}
# The total a GPU needs is the peak allocated plus the CUDA context, NCCL's communicators (measured by
# validation/probes/nccl-memory-outside-allocator/nccl_memory.py) and 13.2% of fragmentation. Rows it does not cover (docs/validation.md 2e):
_IN_USE_FRAGMENTATION = ("the caching allocator reserved more over the allocated peak than the 13.2% allowance (1.15-1.44x; "
                         "pipelines 1.20-1.44x, whose receive buffers, activations and stashed outputs of many sizes live "
                         "across micro-batches; FSDP2 at h 4096 and with a 128k vocabulary 1.17-1.18x): fragmentation is not "
                         "modelled per program")
_IN_USE_DDP_TRANSIENT = ("a DDP run whose allocated peak carries the step-2 bucket transient (6g): the steady-state peak "
                         "the model gives is one 16-bit gradient copy short of it, and so is the total")
_IN_USE_OVER = ("GPipe keeps every micro-batch's activations; the model's peak is +2.6% and the run reserved only 1.05x "
                "its peak, so the total with the 13.2% allowance is 10.8% above the memory in use")
_IN_USE_TINY = ("probe models of 0.4-1.3 GiB: DDP's reducer state and the allocator's 1.15x rounding on small blocks "
                "are a large share of so little memory")
#: rows whose device memory in use the stated total does not cover within [0, +10%]
KNOWN_IN_USE_MISS = {rid: _IN_USE_FRAGMENTATION for rid in (
    "e8-pp4-1f1b-h100", "e8-pp4-interleaved-h100", "gv-pp2-interleaved-h100@blind11", "gv-pp4-interleaved-h100",
    "w7-fsdp4-h100", "d7-pp4-1f1b-h100", "p13-rg-1f1b-m8", "p13-rg-interleaved-m8", "p13-b2-interleaved",
    "p13-gv-pp4-1f1b", "p13-rg-pp4-interleaved-m16", "p13-gv-pp2-dp2-1f1b", "p14-rg-pp4-v3", "p14-gv-pp4-v2",
    "p14-b2-pp2-dp2-v2", "f15-fsdp2-v128k-h100", "f15-fsdp2-h4096-h100", "f15-pp2-interleaved-v4-h100",
    "f15-pp2-1f1b-m12-h100", "e8-pp4-1f1b@blind8", "e8-pp4-interleaved@blind8", "gv-pp2-interleaved@blind9",
    "f15-fsdp2-v128k", "f15-fsdp2-h4096", "f15-pp2-interleaved-v4", "f15-pp2-1f1b-m12",
    # the FSDP2 host study's width sweep (validation/fsdp16-host-width_h200x2_2026-11-27, hostcpu17-h100): 256-token micro-batches, reserved 1.19-1.39x
    "hs-fsdp2-h1024", "hs-fsdp2-h2048", "hs-fsdp2-h3072", "hs-fsdp2-h2048-h100",
    # blind set 16 (4x H100): reserved 1.28-1.42x the allocated peak
    "f16-fsdp4-h4096-h100", "f16-fsdp4-v128k-h100", "f16-pp4-interleaved-v3-h100", "f16-pp4-1f1b-s4k-h100",
    # blind set 17 (2x H200): FSDP2 reserved 1.17-1.19x the allocated peak
    "f17-fsdp2-llama", "f17-fsdp2-wide")}
KNOWN_IN_USE_MISS.update({rid: _IN_USE_DDP_TRANSIENT for rid in (
    "e8-tp2-dp2-h100", "w7-ddp2-h100@blind11", "w7-ddp4-h100", "e8-tp2-dp2@blind8", "b2-ddp2@blind9")})
KNOWN_IN_USE_MISS.update({rid: _IN_USE_OVER for rid in (
    "p13-rg-gpipe-m6",)})
KNOWN_IN_USE_MISS.update({rid: _IN_USE_TINY for rid in (
    "h7-ddp2-h100", "h7-ddp2@host8", "h8-ddp4@host8", "m19-single-host-r1")})
KNOWN_IN_USE_MISS.update({rid: "compiled blocks at h 2048 (round 3 of validation/fp8-moe-1gpu_h200_2026-12-02): the "
                          "fused layer's memory is Megatron's kernels', not what torch.compile keeps (allocated -9.6% bf16, "
                          "+4.2% FP8), so the stated total is 2.9% under (bf16) and 11% over (FP8) the memory in use"
                          for rid in ("r3-d2-compiled", "r3-d2-fp8-compiled")})
KNOWN_IN_USE_MISS["d2-fp8-tw"] = ("FP8 tensorwise: the e4m3 casts and transposes of the backward are not in the memory "
                                   "model, and the run reserved more over its peak than the allowance")
KNOWN_IN_USE_MISS["e8-loop"] = ("an expert loop: each expert's gathered tokens and outputs are blocks of another size "
                                "(2,048 tokens per expert of 8): the allocator reserved more than the 13.2% allowance, and "
                                "the allocated peak is 4.6% under (the model's MoE transients)")
KNOWN_IN_USE_MISS["m19-single-host-forceddp-r1"] = (
    "the --force-ddp probe runs a one-GPU scenario under a one-rank NCCL process group: its communicator (~1.1 GiB, "
    "validation/probes/nccl-memory-outside-allocator/nccl_memory.py) is in use on the device but not in a one-GPU scenario's total")
# blind set 18 (2x H200, 2026-11-27): reserved 1.17x / 1.22x / 1.39x the allocated peak (DDP at 1.5 GiB, FSDP2 h 1024,
# the wide FSDP2 row with 2048-token activations of h 3072), above the 13.2% allowance
KNOWN_IN_USE_MISS.update({rid: _IN_USE_FRAGMENTATION for rid in (
    "f18-ddp2-host-r1", "f18-fsdp2-h1024-r1", "f18-fsdp2-wide-r1")})


def _run_key(row: dict) -> str:
    """The row's run id; for the 4x H200 VM's sets (whose ids repeat other sets' H200 names) tagged with the set."""
    src = str(row.get("source", "")).split("/")[0]
    return (f"{row.get('run_id')}@{src}" if src in ("blind8", "blind9", "host8", "ddp-steps", "blind11", "skew11", "ddp-transient")
            else str(row.get("run_id")))


def known_miss(row: dict) -> str | None:
    return KNOWN_MEMORY_MISS.get(_run_key(row))


def _id(r: dict) -> str:
    o = ",".join(x for x in sorted(r["overrides"]) if not x.startswith("cluster.topology"))
    return f"{r['scenario']}[{o}]{'-forceddp' if _key(r)[2] else ''}@{r['gpu'].split()[-1]}"


def test_rows_found():
    assert len(ROWS) >= 35
    assert any("FSDP" in json.dumps(r["implementation"]) for r in ROWS)
    assert any("DistributedDataParallel" in json.dumps(r["implementation"]) for r in ROWS)


@pytest.mark.parametrize("row", [pytest.param(r, marks=pytest.mark.xfail(reason=known_miss(r), strict=True))
                                 if known_miss(r) else r for r in ROWS], ids=[_id(r) for r in ROWS])
def test_peak_allocated_within_5_percent(row):
    pred = predicted_peak(row)
    assert_close(pred / GIB, row["peak_memory_bytes"] / GIB, rel=TOL, what=f"row {_id(row)}: peak allocated",
                 unit="GiB", names=("predicted", "measured"))


def test_force_ddp_probe_adds_the_bucket_copy():
    """The one-rank DDP probe minus the same run without DDP is DDP's flat gradient copy, N x grad bytes."""
    probes = [r for r in ROWS if _key(r)[2]]
    assert probes
    for r in probes:
        base = next(b for b in ROWS if _key(b)[:2] == _key(r)[:2] and not _key(b)[2] and b["gpu"] == r["gpu"])
        rs = resolve_scenario(ROOT / r["scenario_file"], list(r["overrides"]))
        grads = DTYPE_BYTES[rs.scenario.training.precision.grads]
        copy = r["params_total"] * grads
        assert_close((_steady_peak(r) - _steady_peak(base)) / GIB, copy / GIB, rel=0.05,
                     what=f"row {_id(r)}: DDP probe minus {_id(base)}", unit="GiB", names=("measured", "bucket copy"))


def _steady_peak(row: dict) -> float:
    """The run's peak after its second step where the run recorded every step's (the step-2 bucket transient of DDP
    left out, 6g), else its peak."""
    steps = row.get("peak_memory_bytes_per_step_rank0")
    return max(steps[2:]) if steps and len(steps) > 2 else row["peak_memory_bytes"]


RESERVED_ROWS = [r for r in ROWS if r.get("peak_reserved_bytes") and r.get("device_used_bytes")]


@pytest.mark.parametrize("row", [pytest.param(r, marks=pytest.mark.xfail(
    reason=KNOWN_IN_USE_MISS[_run_key(r)], strict=True)) if _run_key(r) in KNOWN_IN_USE_MISS else r
    for r in RESERVED_ROWS], ids=[_id(r) for r in RESERVED_ROWS])
def test_total_needed_covers_the_device_memory_in_use(row):
    """Rows with reserved and in-use memory (validation/memory-peak_h100_2026-11-25): the predicted total the GPU needs is
    never below the memory the process held on the device (``total - free`` after the steps), and at most
    10% above it (the fragmentation term takes the largest measured reserved/allocated ratio)."""
    m = predict(row)
    used = row["device_used_bytes"]
    need = m["total_needed_bytes"]
    assert used <= need <= 1.10 * used, f"row {_id(row)}: total needed {need / GIB:.3f} GiB vs in use " \
        f"{used / GIB:.3f} GiB ({need / used - 1:+.1%}; must be 0 to +10%)"


def test_total_needed_adds_stated_terms_and_fits_uses_it():
    m = predict(ROWS[0])
    total = m["peak_allocated_bytes"] + m["cuda_context_bytes"] + m["nccl_buffer_bytes"] + m["fragmentation_bytes"]
    assert m["total_needed_bytes"] == pytest.approx(total)
    # fits: the allocated peak with only the fragmentation the allocator cannot give back under pressure
    # (clustersim/workload/memory.py FRAGMENTATION_FLOOR_FRACTION; tests/unit/test_memory_optimizer_impl.py)
    assert m["min_needed_bytes"] < m["total_needed_bytes"]
    assert m["fits"] == (m["min_needed_bytes"] <= m["capacity_bytes"])
    assert m["tight"] == (m["fits"] and m["total_needed_bytes"] > m["capacity_bytes"])


# Calculon's best plan for GPT-3 175B on 1,024 H100 (issue 14): 57.1 GiB per GPU in Calculon.
CALCULON_PLAN = ["parallelism.tp=2", "parallelism.pp=16", "parallelism.dp=32", "parallelism.schedule=interleaved",
                 "parallelism.virtual_stages=6", "parallelism.sequence_parallel=true", "training.recompute=selective"]
CALCULON_GIB = 57.1


def calculon_case(zero: int) -> dict:
    rs = resolve_scenario(ROOT / "scenarios" / "gpt3-175b.yaml", CALCULON_PLAN + [f"parallelism.zero={zero}"])
    cm = ComputeModel.from_profile(rs.profile.compute, rs.cluster.gpu_spec, "bf16")
    return TransformerStep(rs.scenario, cm).memory(rs.cluster.gpu_spec.hbm_bytes)


def test_calculon_plan_activations_are_korthikanti_interleaved():
    """First pipeline rank: Korthikanti's L layers x 34 sbh/t x (1 + (p-1)/(p v)) (TP+SP+selective,
    interleaved 1F1B), plus the embedding dropout output; within 3%."""
    m = calculon_case(2)
    s, b, h, L, t, p, v = 2048, 1, 12288, 96, 2, 16, 6
    want = L * 34 * s * b * h / t * (1 + (p - 1) / (p * v)) + s * b * h * p / t
    assert m["stage"] == 0
    assert_close(m["activations"] / GIB, want / GIB, rel=0.03, what="Calculon plan, first stage: activations",
                 unit="GiB", names=("predicted", "Korthikanti"))


def test_calculon_plan_with_sharded_gradients_is_near_calculon():
    """With the gradients sharded over DP (ZeRO-2) the plan needs 58.2 GiB peak allocated, Calculon 57.1
    (issue 14's figure); Megatron's distributed optimizer (ZeRO-1: fp32 main grads whole) needs 79.0."""
    z2, z1 = calculon_case(2), calculon_case(1)
    assert_close(z2["peak_allocated_bytes"] / GIB, CALCULON_GIB, rel=0.03, what="Calculon plan with ZeRO-2: peak",
                 unit="GiB", names=("predicted", "Calculon"))
    assert z2["fits"] and not z1["fits"]


STEP_ROWS = [json.loads(line) for line in SET_FILE["ddp-steps"]
             .read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("row", STEP_ROWS, ids=[r["run_id"] for r in STEP_ROWS])
def test_ddp_steady_state_peak_within_5_percent_and_the_transient_is_step_2(row):
    """Rows with rank 0's allocator peak of every step (train_gpt.py resets the statistics per step): the model's
    peak is the steady state (every step from the third on) within 5%; any excess of the run's peak over it sits in
    the second step and is at most one 16-bit copy of the gradients (the DDP bucket set)."""
    steps = row["peak_memory_bytes_per_step_rank0"]
    assert len(steps) == 11  # 3 warm-up + 8 timed
    steady = max(steps[2:])
    assert min(steps[2:]) == pytest.approx(steady, rel=0.001)
    pred = predict(row)
    assert_close(pred["peak_allocated_bytes"] / GIB, steady / GIB, rel=TOL, what=f"row {row['run_id']}: steady peak",
                 unit="GiB", names=("predicted", "measured"))
    excess = max(steps) - steady
    assert excess == 0 or (steps.index(max(steps)) == 1 and excess <= 1.05 * pred["ddp_buckets"])


def test_the_step_2_transient_was_seen():
    """rg-ddp2's run of validation/ddp-step2-transient_h200x2_2026-11-27/ddp-steps shows it (+2.64 GiB in step 2), ac-ddp2's does not."""
    by = {r["run_id"]: r["peak_memory_bytes_per_step_rank0"] for r in STEP_ROWS}
    assert max(by["rg-ddp2"]) - max(by["rg-ddp2"][2:]) > 2.5 * 2**30
    assert max(by["ac-ddp2"]) == max(by["ac-ddp2"][2:])


def _transient_runs() -> list[dict]:
    """Every run (all rows, not one per configuration) whose per-step peaks show DDP's step-2 transient: step 2 more
    than 2% above the steady state of steps 3 on."""
    out, seen = [], set()
    for _, f in FILES:  # a run that stands in two files (blind set 6's log rows and its rebuilt rows): counted once
        for line in f.read_text().splitlines():
            r = json.loads(line) if line.strip() else {}
            steps = r.get("peak_memory_bytes_per_step_rank0")
            key = (r.get("run_id"), r.get("date"), r.get("step_time_s"))
            if r.get("status") == "ok" and "scenario_file" in r and steps and len(steps) > 2 \
                    and steps[1] > 1.02 * max(steps[2:]) and key not in seen:
                seen.add(key)
                out.append(r)
    return out


def test_stated_ddp_rebuild_transient_is_the_step_2_excess():
    """Every run that showed DDP's step-2 transient peaked there at the model's steady peak plus the
    ``ddp_rebuild_transient_bytes`` it states beside the total (one bucket set; for the one-rank probe its bucket
    copy), within 5%; and only DDP runs show it."""
    runs = _transient_runs()
    assert len({r["run_id"] for r in runs}) >= 4
    for r in runs:
        mem = predict(r)
        transient = ddp_probe_bytes(r) if _key(r)[2] else mem["ddp_rebuild_transient_bytes"]
        assert transient > 0, r["run_id"]
        step2 = r["peak_memory_bytes_per_step_rank0"][1]
        assert_close((predicted_peak(r) + transient) / GIB, step2 / GIB, rel=TOL,
                     what=f"run {r['run_id']}: step-2 peak", unit="GiB", names=("predicted", "measured"))


def table() -> str:
    lines = ["| run (scenario, overrides) | GPU | measured GiB | predicted GiB | error |", "|---|---|---|---|---|"]
    for r in ROWS:
        p = predicted_peak(r)
        meas = r["peak_memory_bytes"]
        o = " ".join(x for x in r["overrides"] if not x.startswith("cluster.topology"))
        tag = " (--force-ddp probe)" if _key(r)[2] else ""
        lines.append(f"| {r['scenario']} {o}{tag} | {r['world_size']}x {r['gpu'].replace('NVIDIA ', '')} | "
                     f"{meas / 2**30:.2f} | {p / 2**30:.2f} | {(p / meas - 1) * 100:+.1f}% |")
    return "\n".join(lines)


def summary() -> str:
    """How many measured rows (ROWS, the peak test's rows) the model predicts within 5%, 3.2% and 2%."""
    errs = [abs(predicted_peak(r) / r["peak_memory_bytes"] - 1) for r in ROWS]
    within = {tol: sum(e <= tol for e in errs) for tol in (0.05, 0.032, 0.02)}
    return (f"{len(errs)} runs: {within[0.05]} within 5%, {within[0.032]} within 3.2%, {within[0.02]} within 2% "
            f"(strict known misses: {sum(1 for r in ROWS if known_miss(r))})")


if __name__ == "__main__":
    print(table())
    print(summary())
    for z in (1, 2):
        m = calculon_case(z)
        print(f"GPT-3 175B TP2 PP16 DP32 interleaved v=6 selective SP, zero={z}: " + ", ".join(
            f"{k} {m[k] / 2**30:.1f} GiB" for k in ("params", "grads", "optimizer", "activations",
                                                   "peak_allocated_bytes", "total_needed_bytes"))
              + f"; fits {m['fits']} (Calculon: {CALCULON_GIB} GiB)")


BLIND = ROOT / "validation" / "memory-blind_h100_2026-11-25"


def test_committed_blind_predictions_within_5_percent():
    """The memory blind set: peaks predicted and committed (predictions.json, commit 952edce) before the
    seven H100 runs were measured (train_steps.jsonl, validation/memory-blind_h100_2026-11-25/memory_blind.sh). The committed
    numbers are compared, not a re-prediction, so a later model change cannot make this pass."""
    committed = {p["name"]: p for p in json.loads((BLIND / "predictions.json").read_text())}
    measured = {}
    for line in (BLIND / "train_steps.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r.get("kind") == "train_step" and r.get("status") == "ok":
            measured.setdefault(r["run_id"], r)
    assert set(measured) == set(committed)
    for name, p in committed.items():
        m = measured[name]
        assert tuple(sorted(m["overrides"])) == tuple(sorted(p["overrides"]))
        assert_close(p["predicted_peak_allocated_bytes"] / GIB, m["peak_memory_bytes"] / GIB, rel=TOL,
                     what=f"blind run {name}: peak allocated", unit="GiB", names=("committed", "measured"))


def _check_committed_blind(predictions: str, runs: tuple[str, ...], count: int) -> None:
    """The committed peaks of ``predictions`` (a study's file, repository path) against the rows of the ``runs``
    sets."""
    committed = {p["name"]: p for p in json.loads((ROOT / predictions).read_text())}
    measured = [json.loads(line) for d in runs for line in SET_FILE[d].read_text().splitlines() if line.strip()]
    assert len(measured) == count
    for m in measured:
        p = committed[m["run_id"]]
        assert tuple(sorted(m["overrides"])) == tuple(sorted(p["overrides"]))
        assert_close(p["predicted_peak_allocated_bytes"] / GIB, m["peak_memory_bytes"] / GIB, rel=TOL,
                     what=f"blind run {m['run_id']}: peak allocated", unit="GiB", names=("committed", "measured"))


def test_blind15_committed_memory_predictions_within_5_percent():
    """Blind set 15 (docs/validation.md 2e): peaks predicted with main 3f2dca1 and committed (e756f67) before the four
    runs on 2x H100 and on 2x H200; the committed numbers are compared, not a re-prediction (FSDP2 at h 4096 was
    +3.5% blind on both)."""
    _check_committed_blind("validation/blind15-memory_h100x2-h200x2_2026-11-27/memory-predictions.json",
                           ("blind15", "blind15-h200"), 8)


def test_blind16_committed_memory_predictions_within_5_percent():
    """Blind set 16 (docs/validation.md 2f): peaks predicted with main 525bdad and committed (968154f) before the five
    4x H100 runs; the committed numbers are compared (all five within 1%)."""
    _check_committed_blind("validation/blind16-memory-4gpu_h100x4_2026-11-27/memory-predictions.json", ("blind16",), 5)
