"""Published training runs (../shared/reference/published-runs.md §1-§3) predicted within 15%.

Every row gives the complete configuration; values the source does not state are assumptions
listed in ``ASSUMED`` and in docs/validation.md. All rows of one GPU type share one compute model
(the topology's shipped default profile): nothing is tuned per row. Compared quantity: step time
(independent of FLOP conventions, §0.5).

Run ``python tests/integration/test_published_runs.py`` to print the validation table.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
from checks import assert_close

from clustersim.config.scenario import Scenario
from clustersim.simulate.run import run_scenario

DATA = Path(__file__).resolve().parents[1] / "data" / "training"

# Common assumptions (see docs/validation.md):
#  - GPT architecture: learned positions, LayerNorm, GELU 4h MLP, biases, tied embeddings (Megatron GPT).
#  - A100 rows (2021-2022): no FlashAttention -> attention: eager (fused scale-mask-softmax counted as
#    memory-bound kernels); fp16 params with fp32 main grads and fp32 Adam states (Megatron mixed precision).
#  - H100 rows (Megatron-Core r0.8.0): bf16, Transformer Engine flash attention, --overlap-grad-reduce and
#    distributed optimizer (zero: 1), sequence parallel with TP (required by --tp-comm-overlap), no recompute.
#  - Micro-batch size 1 where not stated; DDP bucket 40M params (Megatron default) = 160 MB of fp32 grads.
#  - Narayanan rows (Megatron 2021): gradient all-reduce after the whole backward (no --overlap-grad-reduce
#    then): parallelism.dp_overlap false.
A100_GPT = {"mlp": "gelu", "norm": "layernorm", "bias": True, "tied_embeddings": True,
            "position_embedding": "learned", "attention": "eager", "vocab": 51200, "seq_len": 2048}
A100_PREC = {"params": "fp16", "grads": "fp32", "optimizer_states": "fp32", "master_weights": True}
H100_GPT = {"mlp": "gelu", "norm": "layernorm", "bias": True, "tied_embeddings": False,
            "position_embedding": "rope", "attention": "flash", "vocab": 131072, "seq_len": 4096}
H100_PREC = {"params": "bf16", "grads": "fp32", "optimizer_states": "fp32", "master_weights": True}

ROWS = [
    # id, source, topology, nodes, model dims, training, parallelism, reported step time (s)
    ("K22B-sel", "Korthikanti T5 22B, TP+SP+selective", "dgx-a100-superpod", 1,
     {"layers": 48, "hidden": 6144, "heads": 64}, {"global_batch": 4, "micro_batch": 4, "recompute": "selective"},
     {"tp": 8, "sequence_parallel": True}, 1.10),
    ("K22B-full", "Korthikanti T5 22B, TP + full recompute", "dgx-a100-superpod", 1,
     {"layers": 48, "hidden": 6144, "heads": 64}, {"global_batch": 4, "micro_batch": 4, "recompute": "full"},
     {"tp": 8}, 1.42),
    ("K175B-sel", "Korthikanti T5 175B, TP8 PP8 v3, SP+selective", "dgx-a100-superpod", 8,
     {"layers": 96, "hidden": 12288, "heads": 96}, {"global_batch": 64, "micro_batch": 1, "recompute": "selective"},
     {"tp": 8, "pp": 8, "schedule": "interleaved", "virtual_stages": 3, "sequence_parallel": True}, 13.75),
    ("K175B-full", "Korthikanti T5 175B, TP8 PP8 v3, full recompute", "dgx-a100-superpod", 8,
     {"layers": 96, "hidden": 12288, "heads": 96}, {"global_batch": 64, "micro_batch": 1, "recompute": "full"},
     {"tp": 8, "pp": 8, "schedule": "interleaved", "virtual_stages": 3}, 18.13),
    ("K530B-sel", "Korthikanti T5 530B, TP8 PP35 v3, SP+selective", "dgx-a100-superpod", 35,
     {"layers": 105, "hidden": 20480, "heads": 128}, {"global_batch": 280, "micro_batch": 1, "recompute": "selective"},
     {"tp": 8, "pp": 35, "schedule": "interleaved", "virtual_stages": 3, "sequence_parallel": True}, 37.83),
    ("N1.7B", "Narayanan T1 1.7B, DP32, full recompute", "dgx-a100-superpod", 4,
     {"layers": 24, "hidden": 2304, "heads": 24}, {"global_batch": 512, "micro_batch": 1, "recompute": "full"},
     {"dp": 32, "ddp_bucket_mb": 160, "dp_overlap": False}, 3.53),
    ("N3.6B", "Narayanan T1 3.6B, TP2 DP32, full recompute", "dgx-a100-superpod", 8,
     {"layers": 30, "hidden": 3072, "heads": 32}, {"global_batch": 512, "micro_batch": 1, "recompute": "full"},
     {"tp": 2, "dp": 32, "ddp_bucket_mb": 160, "dp_overlap": False}, 3.70),
    ("N7.5B", "Narayanan T1 7.5B, TP4 DP32, full recompute", "dgx-a100-superpod", 16,
     {"layers": 36, "hidden": 4096, "heads": 32}, {"global_batch": 512, "micro_batch": 1, "recompute": "full"},
     {"tp": 4, "dp": 32, "ddp_bucket_mb": 160, "dp_overlap": False}, 3.70),
    ("N18B", "Narayanan T1 18.4B, TP8 DP32, full recompute", "dgx-a100-superpod", 32,
     {"layers": 40, "hidden": 6144, "heads": 48}, {"global_batch": 1024, "micro_batch": 1, "recompute": "full"},
     {"tp": 8, "dp": 32, "ddp_bucket_mb": 160, "dp_overlap": False}, 9.40),
    ("N39B", "Narayanan T1 39.1B, TP8 PP2 DP32, full recompute", "dgx-a100-superpod", 64,
     {"layers": 48, "hidden": 8192, "heads": 64}, {"global_batch": 1536, "micro_batch": 1, "recompute": "full"},
     {"tp": 8, "pp": 2, "dp": 32, "schedule": "interleaved", "virtual_stages": 2, "ddp_bucket_mb": 160,
      "dp_overlap": False}, 14.45),
    ("B32B", "Megatron-Core B1 32B, TP8 DP48", "dgx-h100-superpod", 48,
     {"layers": 48, "hidden": 7168, "heads": 56}, {"global_batch": 192, "micro_batch": 1},
     {"tp": 8, "dp": 48, "sequence_parallel": True, "tp_comm_overlap": True, "zero": 1,
      "ddp_bucket_mb": 160}, 0.89),
    ("B70B", "Megatron-Core B1 70B, TP8 PP2 DP48", "dgx-h100-superpod", 96,
     {"layers": 84, "hidden": 8192, "heads": 64}, {"global_batch": 384, "micro_batch": 1},
     {"tp": 8, "pp": 2, "dp": 48, "sequence_parallel": True, "tp_comm_overlap": True, "zero": 1,
      "ddp_bucket_mb": 160}, 2.18),
    ("B177B", "Megatron-Core B1 177B, TP8 PP6 DP48", "dgx-h100-superpod", 288,
     {"layers": 96, "hidden": 12288, "heads": 96}, {"global_batch": 1152, "micro_batch": 1},
     {"tp": 8, "pp": 6, "dp": 48, "sequence_parallel": True, "tp_comm_overlap": True, "zero": 1,
      "ddp_bucket_mb": 160}, 5.26),
]


def scenario_of(row) -> Scenario:
    rid, _, topo, nodes, dims, tr, par, _ = row
    a100 = "a100" in topo
    model = dict(A100_GPT if a100 else H100_GPT)
    model.update(dims)
    training = dict(tr)
    training["precision"] = A100_PREC if a100 else H100_PREC
    p = {"dp": 1, "pp": 1}
    p.update(par)
    return Scenario.model_validate({"name": rid, "cluster": {"topology": topo, "nodes": nodes},
                                    "model": model, "training": training, "parallelism": p})


# Known miss: B32B. Megatron-Core ran with --tp-comm-overlap, now modelled (parallelism.tp_comm_overlap:
# each TP all-gather / reduce-scatter beside the GEMM it feeds or drains). What remains is the DP
# gradient reduce-scatter of the last micro-batch: with only 4 micro-batches per replica, 0.37 s of
# fp32 gradient traffic (4B parameters per TP rank) cannot hide behind one micro-batch's backward;
# the source does not state the gradient-reduction precision (bf16 would halve it).
KNOWN_MISS = {"B32B": "exposed DP gradient reduce-scatter after the last of 4 micro-batches (fp32 grads assumed)"}


@cache
def predicted(rid: str) -> dict:
    """The simulator's ``to_dict()`` for row ``rid`` (analytical; one run per row per session)."""
    (row,) = [r for r in ROWS if r[0] == rid]
    return run_scenario(scenario_of(row), fidelity="analytical").to_dict()


@pytest.mark.parametrize("row", [pytest.param(r, marks=pytest.mark.xfail(reason=KNOWN_MISS[r[0]], strict=True))
                                 if r[0] in KNOWN_MISS else r for r in ROWS], ids=[r[0] for r in ROWS])
def test_published_step_time_within_15_percent(row):
    res = predicted(row[0])
    assert_close(res["step_time_s"], row[-1], rel=0.15, what=f"row {row[0]} ({row[1]}; breakdown {res['breakdown']})",
                 unit="s", names=("predicted", "published"))


def test_at_least_six_rows_within_tolerance():
    """From the simulator's predictions (not from the table's own constants): at least six of
    the published runs within 15% (docs/validation.md section 3), and they are exactly
    the rows not listed in KNOWN_MISS, so that list cannot drift from what the model does."""
    err = {r[0]: predicted(r[0])["step_time_s"] / r[-1] - 1 for r in ROWS}
    within = {rid for rid, e in err.items() if abs(e) <= 0.15}
    gaps = ", ".join(f"{rid} {e:+.1%}" for rid, e in err.items())
    assert len(within) >= 6, f"{len(within)} rows within 15%: {gaps}"
    assert within == {r[0] for r in ROWS} - set(KNOWN_MISS), f"within 15%: {sorted(within)}; KNOWN_MISS: " \
        f"{sorted(KNOWN_MISS)}; {gaps}"


#: Issue 14's bar for a GPU without its own measurements: every A100 row within 10% through the kernel
#: tables transferred from dgx-h100 (docs/validation.md sections 3a, 3e). N7.5B and N18B were the misses
#: (+12.5%, +13.7%; section 3d) until the batched attention GEMMs were priced by measured shape and the GEMM
#: library's measured share of a partial wave's loss replaced the one-tile wave model (section 3e: +7.2%, +7.2%).
A100_ROWS = [r for r in ROWS if "a100" in r[2]]


@pytest.mark.parametrize("row", A100_ROWS, ids=[r[0] for r in A100_ROWS])
def test_a100_step_time_within_10_percent(row):
    res = predicted(row[0])
    assert_close(res["step_time_s"], row[-1], rel=0.10, what=f"A100 row {row[0]} ({row[1]}; breakdown {res['breakdown']})",
                 unit="s", names=("predicted", "published"))


#: Korthikanti et al. 2022 Table 4: one layer of the 22B model (TP 8, micro-batch 4, sequence 2048) on
#: A100, forward + backward ms (reference/published-runs.md Table C2); (training, parallelism) overrides
KORTHIKANTI_TABLE4 = {
    "baseline": ({"recompute": "none"}, {"sequence_parallel": False}, 19.6),
    "sequence parallel": ({"recompute": "none"}, {"sequence_parallel": True}, 19.0),
    "full recompute": ({"recompute": "full"}, {"sequence_parallel": False}, 27.2),
    "selective": ({"recompute": "selective"}, {"sequence_parallel": False}, 20.9),
    "selective + SP": ({"recompute": "selective"}, {"sequence_parallel": True}, 20.3),
}


@cache
def layer_ms(setting: str) -> float:
    """One 22B layer's forward + backward (compute and TP collectives, ms): the K22B row with 48 and with 24
    layers, differenced (embedding, head and the per-parameter optimizer drop out)."""
    tr, par, _ = KORTHIKANTI_TABLE4[setting]
    (row,) = [r for r in ROWS if r[0] == "K22B-sel"]
    rid, src, topo, nodes, dims, t, p, rep = row
    parts = []
    for layers in (48, 24):
        sc = scenario_of((rid, src, topo, nodes, dict(dims, layers=layers), dict(t, **tr), dict(p, **par), rep))
        b = run_scenario(sc, fidelity="analytical").to_dict()["breakdown"]
        parts.append(b["compute"] + b["comm_tp"])
    return (parts[0] - parts[1]) / 24 * 1e3


def test_korthikanti_layer_times():
    """The A100 layer (kernel tables transferred from H100) against Korthikanti's per-layer measurements: every
    setting within 3% (+0.1% to -2.1%; 4.9-7.0% too fast before the transfer took both peaks at the boost clock the
    H100 tables were timed at), and within 3% of each other (what recomputation and SP change is right)."""
    errors = {k: layer_ms(k) / v[2] - 1 for k, v in KORTHIKANTI_TABLE4.items()}
    for k, v in KORTHIKANTI_TABLE4.items():
        assert_close(layer_ms(k), v[2], rel=0.03, what=f"22B layer, {k}", unit="ms", names=("predicted", "Table 4"))
    spread = max(errors.values()) - min(errors.values())
    assert spread <= 0.03, f"errors spread {spread:.1%} > 3%: " + ", ".join(f"{k} {e:+.1%}" for k, e in errors.items())


def test_sequence_parallel_saves_what_korthikanti_measured():
    """SP divides the norms and dropouts by TP but re-gathers each column-parallel input in backward:
    measured saving 3.1% (19.6 -> 19.0 ms) and 2.9% with selective recompute; without the regather the model
    gave 8.1% and 7.7%."""
    for base, sp in (("baseline", "sequence parallel"), ("selective", "selective + SP")):
        saving = 1 - layer_ms(sp) / layer_ms(base)
        measured = 1 - KORTHIKANTI_TABLE4[sp][2] / KORTHIKANTI_TABLE4[base][2]
        assert abs(saving - measured) <= 0.015, \
            f"{base} -> {sp}: SP saves {saving:.1%} of the layer, measured {measured:.1%} (tolerance 1.5 points)"


def table() -> list[dict]:
    """Predicted against reported step time for every row."""
    out = []
    for row in ROWS:
        r = predicted(row[0])
        out.append({"id": row[0], "source": row[1], "gpus": r["n_gpus"], "reported_s": row[-1],
                    "predicted_s": r["step_time_s"], "error": r["step_time_s"] / row[-1] - 1,
                    "mfu": r["mfu"], "bubble": r["breakdown_fraction"]["bubble"]})
    return out


if __name__ == "__main__":
    for k, v in KORTHIKANTI_TABLE4.items():
        print(f"| {k} | {v[2]:.1f} | {layer_ms(k):.2f} | {100 * (layer_ms(k) / v[2] - 1):+.1f}% |")
    for r in table():
        print(f"| {r['id']} | {r['source']} | {r['gpus']} | {r['reported_s']:.2f} | {r['predicted_s']:.2f} | "
              f"{100 * r['error']:+.1f}% | {100 * r['mfu']:.1f}% | {100 * r['bubble']:.1f}% |")
