"""Write this study's scenario files (configs/<id>.yaml) and its row table (rows.yaml) from ROWS below.

Each row is one published run: where it was published (repository, path, commit or page), the configuration as the
source states it, the published figure and how it became a step time, and every value the source does not state
(``assumed``). Rows that today's scenario schema cannot describe carry ``not_expressible`` (why) and get no
scenario file; they are listed and not counted.

    python validation/published-devset_h100-b200-gb200_2026-12-02/make_configs.py   # rewrites configs/ and rows.yaml
"""

from __future__ import annotations

from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent

MB = {"repo": "NVIDIA-NeMo/Megatron-Bridge", "path": "docs/performance-summary-archive.md",
      "commit": "4ab94dfad36641cabdeb96452b21bf676aac4772"}
NEMO_PAGE = "https://docs.nvidia.com/nemo-framework/user-guide/latest/performance/performance_summary.html"
TT_ASYNC = {"repo": "pytorch/torchtitan", "path": "benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md",
            "commit": "2887250bbd9103d0bc997ea2efb3a525b5e5dbc0"}
TT_2412 = {"repo": "pytorch/torchtitan", "path": "benchmarks/llama3_h100_202412_torchtitan.md",
           "commit": "820504e20d1149fbf0b98c567af24c4b0433b22d"}
TT_H200 = {"repo": "pytorch/torchtitan", "path": "benchmarks/llama3-8b_h200_202506_trainy-whitefiber.md",
           "commit": "b5bcd76c66d0acb1a08b176d9639425bc55e0b2a"}

# --------------------------------------------------------------------------------------------- shapes (HF configs)
LLAMA = {"mlp": "swiglu", "norm": "rmsnorm", "position_embedding": "rope", "attention": "flash"}
QWEN3_30B = {"layers": 48, "hidden": 2048, "heads": 32, "kv_heads": 4, "ffn_hidden": 6144, "vocab": 151936,
             "seq_len": 4096, **LLAMA, "moe": {"experts": 128, "top_k": 8, "expert_ffn_hidden": 768}}
QWEN3_235B = {"layers": 94, "hidden": 4096, "heads": 64, "kv_heads": 4, "ffn_hidden": 12288, "vocab": 151936,
              "seq_len": 4096, **LLAMA, "moe": {"experts": 128, "top_k": 8, "expert_ffn_hidden": 1536}}
GPT_OSS = {"layers": 36, "hidden": 2880, "heads": 64, "kv_heads": 8, "ffn_hidden": 2880, "vocab": 201088,
           "seq_len": 4096, **LLAMA, "moe": {"experts": 128, "top_k": 4, "expert_ffn_hidden": 2880}}
MIXTRAL = {"layers": 32, "hidden": 4096, "heads": 32, "kv_heads": 8, "ffn_hidden": 14336, "vocab": 32000,
           "seq_len": 4096, **LLAMA, "moe": {"experts": 8, "top_k": 2, "expert_ffn_hidden": 14336}}
NEMOTRON4 = {"mlp": "gelu", "norm": "layernorm", "position_embedding": "rope", "attention": "flash", "bias": False,
             "vocab": 256000, "seq_len": 4096}
NEMOTRON_15B = {"layers": 32, "hidden": 6144, "heads": 48, "kv_heads": 8, "ffn_hidden": 24576, **NEMOTRON4}
NEMOTRON_340B = {"layers": 96, "hidden": 18432, "heads": 96, "kv_heads": 8, "ffn_hidden": 73728, **NEMOTRON4}
GPT3 = {"preset": "gpt3-175b", "position_embedding": "learned", "seq_len": 2048}

SHAPE_NOTES = {
    "qwen3": "Qwen3 attention width is heads x head_dim 128 (4096 for 30B, 8192 for 235B), not hidden: the schema has "
             "no head_dim, so the q/o projections and attention are narrower than the real ones (model.hidden/heads)",
    "gpt-oss": "GPT-OSS: head_dim 64 (attention width 4096 against hidden 2880; the schema has no head_dim), "
               "alternating 128-token sliding-window and full attention and attention sinks (modelled as full causal "
               "attention), clamped SwiGLU experts (as swiglu), vocab 201,088 (o200k_harmony)",
    "nemotron4": "Nemotron-4: squared-ReLU MLP of two matrices (as mlp gelu, the same GEMMs; the activation kernel "
                 "differs), LayerNorm, RoPE, no biases, untied embeddings, vocab 256,000",
    "gpt3": "NeMo GPT3-175B: 96 layers, h 12288, 96 heads, learned positions, LayerNorm, GELU 4h with biases; vocab "
            "51,200 (the preset; NeMo pads 50,257)",
    "mixtral": "Mixtral 8x7B: 32 layers, h 4096, 32 heads / 8 KV, 8 experts top-2 of FFN 14336, vocab 32,000",
}

# -------------------------------------------------------------------------------------- common assumptions by stack
MEGATRON = [
    "Megatron-Core as the Megatron-Bridge/NeMo performance recipes run it: bf16 weights, fp32 main grads and fp32 "
    "Adam states (precision defaults), distributed optimizer (zero 1), --overlap-grad-reduce and "
    "--overlap-param-gather (dp_overlap true)",
    "sequence parallel and TP communication overlap (userbuffers) wherever TP > 1; no activation recompute "
    "(the recipes at the release's commit were not read: the table states neither)",
    "CP as TransformerEngine's p2p ring (cp_algorithm ring, the Megatron default)",
    "the model's tokens/s/GPU read as an end-to-end optimizer-step rate",
]
MOE = ["MoE: all-to-all dispatcher over NCCL, dropless, uniform routing (router_skew 0: the source force-balances "
       "the tokens among experts), no EP overlap"]
FP8 = ["FP8 / MXFP8 GEMMs as training.precision.params: fp8, the only FP8 setting of the schema (every GEMM and "
       "attention at the fp8 peak; it also counts 1-byte weights, which matters only to memory, not published here)"]
TORCHTITAN = [
    "torchtitan FSDP2 (zero 3) with bf16 compute, fp32 gradient reduction and fp32 AdamW states (precision defaults)",
    "Grand Teton H100 96 GB HBM2e at a 500 W power limit: no such preset; simulated on dgx-h100-superpod "
    "(H100 SXM 80 GB, 700 W, 3.35 TB/s), so its compute is faster than the hosts that ran and its capacity smaller",
    "torch.compile is not modelled: simulated as the eager program with fused kernels (kernel_fusion fused)",
]
H100 = "dgx-h100-superpod (DGX H100, NDR 400 Gb/s rail-optimised fat tree), default profile dgx-h100"
B200 = "dgx-b200 replicated over --nodes = GPUs/8 (DGX B200, 8x ConnectX-7 400 Gb/s), default profile dgx-b200"
GB200 = "gb200-nvl72-superpod (NVL72 racks; up to 72 GPUs in one NVLink domain), default profile gb200-nvl72"


def cluster(system: str, gpus: int) -> dict:
    if system == "H100":
        return {"topology": "dgx-h100-superpod", "gpus": gpus}
    if system == "B200":
        return {"topology": "dgx-b200", "nodes": gpus // 8}
    return {"topology": "gb200-nvl72-superpod", "gpus": gpus}


def mb_row(rid, release, system, model, shape, gpus, prec, gbs, mbs, seq, tp=1, pp=1, cp=1, vp=None, ep=1,
           fsdp=False, tok=None, source=None, extra=None, note=None):
    """A Megatron-Bridge / NeMo table row: published tokens/s/GPU -> step = GBS x seq / (tok/s/GPU x GPUs)."""
    m = dict(shape)
    m["seq_len"] = seq
    par = {"tp": tp, "pp": pp, "dp": gpus // (tp * pp * cp), "zero": 3 if fsdp else 1}
    if cp > 1:
        par["cp"] = cp
    if ep > 1:
        par["ep"] = ep
    if tp > 1:
        par.update(sequence_parallel=True, tp_comm_overlap=True)
    if pp > 1:
        par["schedule"] = "interleaved" if vp and vp > 1 else "1f1b"
        if vp and vp > 1:
            par["virtual_stages"] = vp
    training = {"global_batch": gbs, "micro_batch": mbs}
    if prec != "BF16":
        training["precision"] = {"params": "fp8"}
    topo = {"H100": H100, "B200": B200, "GB200": GB200}[system]
    assumed = [f"topology {topo}"] + MEGATRON + (MOE if ep > 1 else []) + (FP8 if prec != "BF16" else [])
    if fsdp:
        assumed.append("FSDP column > 0: Megatron-FSDP as ZeRO-3 over all GPUs (zero 3)")
    if note:
        assumed.append(SHAPE_NOTES[note])
    groups = [system, "fp8" if prec != "BF16" else "bf16"] + (["moe"] if ep > 1 else ["dense"])
    groups += ["small-experts"] if note in ("qwen3", "gpt-oss") else []
    groups += ["tp-overlap"] if tp > 1 else []
    groups += ["scale"] if gpus >= 256 else []
    return {"id": rid, "source": source or dict(MB, section=f"{release} NeMo Container, Pre-Training, {model}"),
            "system": f"DGX-{system}", "model": model, "precision": prec, "gpus": gpus,
            "layout": {"GBS": gbs, "MBS": mbs, "seq": seq, "FSDP": int(fsdp), "TP": tp, "PP": pp, "CP": cp,
                       "VP": vp, "EP": ep},
            "published": {"metric": "tokens/s/GPU", "value": tok},
            "step_time_s": round(gbs * seq / (tok * gpus), 6),
            "conversion": f"step = GBS x seq / (tokens/s/GPU x GPUs) = {gbs} x {seq} / ({tok} x {gpus})",
            "assumed": assumed + (extra or []), "groups": groups,
            "scenario": {"cluster": cluster(system, gpus), "model": m, "training": training, "parallelism": par}}


def nemo(release, system):
    sec = f"NeMo {release} container, Pre-Training, System DGX-{system}"
    return {"page": NEMO_PAGE, "version": f"NeMo {release} table as stored (search corpus 'pages')", "section": sec}


ROWS = [
    # ----------------------------------------------------------------- Megatron-Bridge 26.04.01 (DGX-H100)
    mb_row("mb2604-llama3-70b-h100-fp8", "26.04.01", "H100", "LLAMA3_70B", {"preset": "llama3-70b"}, 64, "FP8",
           256, 1, 8192, tp=4, pp=8, vp=5, tok=1664),
    mb_row("mb2604-llama31-405b-h100-fp8", "26.04.01", "H100", "LLAMA3.1_405B", {"preset": "llama3-405b"}, 1024,
           "FP8", 1536, 1, 8192, tp=8, pp=8, cp=2, vp=8, tok=328),
    mb_row("mb2604-gptoss-120b-h100-bf16", "26.04.01", "H100", "GPT OSS 120B", GPT_OSS, 64, "BF16", 1280, 1, 4096,
           pp=4, ep=8, tok=5824, note="gpt-oss"),
    mb_row("mb2604-qwen3-30b-h100-fp8", "26.04.01", "H100", "Qwen3_30B_a3B", QWEN3_30B, 16, "FP8", 1024, 1, 4096,
           ep=16, tok=8960, note="qwen3"),
    # ----------------------------------------------------------------- Megatron-Bridge 26.04.01 (DGX-B200)
    mb_row("mb2604-gptoss-120b-b200-bf16", "26.04.01", "B200", "GPT OSS 120B", GPT_OSS, 64, "BF16", 1280, 4, 4096,
           ep=8, tok=13568, note="gpt-oss"),
    mb_row("mb2604-qwen3-30b-b200-mxfp8", "26.04.01", "B200", "Qwen3_30B_a3B", QWEN3_30B, 8, "MXFP8", 512, 4, 4096,
           ep=8, tok=27136, note="qwen3"),
    # ----------------------------------------------------------------- Megatron-Bridge 26.04.01 (DGX-GB200)
    mb_row("mb2604-llama3-70b-gb200-fp8-fsdp", "26.04.01", "GB200", "LLAMA3_70B", {"preset": "llama3-70b"}, 64,
           "FP8", 256, 2, 8192, fsdp=True, tok=4224),
    mb_row("mb2604-llama3-70b-gb200-mxfp8", "26.04.01", "GB200", "LLAMA3_70B", {"preset": "llama3-70b"}, 64,
           "MXFP8", 256, 1, 8192, tp=2, pp=4, vp=5, tok=3712),
    mb_row("mb2604-gptoss-120b-gb200-bf16", "26.04.01", "GB200", "GPT OSS 120B", GPT_OSS, 64, "BF16", 1280, 4, 4096,
           ep=64, tok=16640, note="gpt-oss"),
    mb_row("mb2604-qwen3-235b-gb200-mxfp8", "26.04.01", "GB200", "Qwen3_235B_a22B", QWEN3_235B, 256, "MXFP8", 8192,
           1, 4096, pp=8, vp=3, ep=32, tok=5680, note="qwen3"),
    mb_row("mb2604-qwen3-30b-gb200-mxfp8", "26.04.01", "GB200", "Qwen3_30B_a3B", QWEN3_30B, 8, "MXFP8", 512, 4, 4096,
           ep=8, tok=26112, note="qwen3"),
    # ----------------------------------------------------------------- NeMo 25.02 (DGX-B200, DGX-H100), FP8-CS
    mb_row("nemo2502-llama3-8b-b200-fp8", "25.02", "B200", "LLAMA3-8B", {"preset": "llama3-8b"}, 8, "FP8", 128, 2,
           8192, tok=26006, source=nemo("25.02", "B200")),
    mb_row("nemo2502-llama3-70b-b200-fp8", "25.02", "B200", "LLAMA3-70B", {"preset": "llama3-70b"}, 64, "FP8", 128,
           1, 8192, tp=2, pp=4, cp=2, vp=5, tok=3062, source=nemo("25.02", "B200")),
    mb_row("nemo2502-llama3-405b-b200-fp8", "25.02", "B200", "LLAMA3-405B", {"preset": "llama3-405b"}, 128, "FP8",
           64, 1, 8192, tp=4, pp=8, cp=2, vp=8, tok=625, source=nemo("25.02", "B200")),
    mb_row("nemo2502-nemotron4-15b-b200-fp8", "25.02", "B200", "Nemotron-15B", NEMOTRON_15B, 64, "FP8", 256, 2, 4096,
           tok=14760, source=nemo("25.02", "B200"), note="nemotron4"),
    mb_row("nemo2502-nemotron4-340b-b200-fp8", "25.02", "B200", "Nemotron-340B", NEMOTRON_340B, 128, "FP8", 32, 1,
           4096, tp=8, pp=4, vp=12, tok=602, source=nemo("25.02", "B200"), note="nemotron4"),
    mb_row("nemo2502-mixtral-8x7b-b200-fp8", "25.02", "B200", "Mixtral-8x7B", MIXTRAL, 64, "FP8", 256, 2, 4096,
           ep=8, tok=15457, source=nemo("25.02", "B200"), note="mixtral"),
    mb_row("nemo2502-gpt3-175b-b200-fp8", "25.02", "B200", "GPT3-175B", GPT3, 512, "FP8", 2048, 2, 2048, tp=4, pp=4,
           vp=6, tok=1600, source=nemo("25.02", "B200"), note="gpt3"),
    mb_row("nemo2502-gpt3-175b-h100-fp8", "25.02", "H100", "GPT3-175B", GPT3, 512, "FP8", 2048, 2, 2048, tp=4, pp=8,
           vp=6, tok=866, source=nemo("25.02", "H100"), note="gpt3"),
    # ----------------------------------------------------------------- NeMo 25.04 (DGX-GB200), FP8-CS
    mb_row("nemo2504-gpt3-175b-gb200-fp8", "25.04", "GB200", "GPT3-175B", GPT3, 128, "FP8", 256, 2, 2048, tp=4,
           pp=4, vp=12, tok=1804, source=nemo("25.04", "GB200"), note="gpt3"),
    mb_row("nemo2504-llama3-405b-gb200-fp8", "25.04", "GB200", "LLAMA3-405B", {"preset": "llama3-405b"}, 128, "FP8",
           64, 1, 8192, tp=4, pp=8, cp=2, vp=8, tok=665, source=nemo("25.04", "GB200")),
    mb_row("nemo2504-nemotron4-15b-gb200-fp8", "25.04", "GB200", "Nemotron-15B", NEMOTRON_15B, 64, "FP8", 256, 2,
           4096, tok=17809, source=nemo("25.04", "GB200"), note="nemotron4"),
    mb_row("nemo2504-mixtral-8x7b-gb200-fp8", "25.04", "GB200", "Mixtral-8x7B", MIXTRAL, 64, "FP8", 256, 2, 4096,
           ep=8, tok=19275, source=nemo("25.04", "GB200"), note="mixtral"),
]


def tt_70b(rid, quant, async_tp, tok, source=None, memory=None):
    """torchtitan, Llama 3.1 70B on 256 H100: FSDP 32 x TP 8, compile, full AC, local batch 16 (the AsyncTP benchmark
    of 2025-06, or ``source``: Table 4 of the 2024-12 one, which also publishes memory)."""
    par = {"tp": 8, "dp": 32, "zero": 3, "sequence_parallel": True}
    if async_tp:
        par["tp_comm_overlap"] = True
    training = {"global_batch": 512, "micro_batch": 16, "recompute": "full"}
    if quant != "bf16":
        training["precision"] = {"params": "fp8"}
    label = {"bf16": "None (bfloat16)", "fp8tw": "float8 tensorwise"}[quant]
    pub = {"metric": "tokens/s/GPU", "value": tok}
    if memory:
        pub.update(memory_GiB=memory, memory_metric=TT_MEMORY)
    return {"id": rid, "source": source or dict(TT_ASYNC, section=f"Llama3 70b on 256 H100s, {label}, "
                                                                    f"{'Async' if async_tp else 'Vanilla'} TP"),
            "system": "Grand Teton H100 96GB (500 W)", "model": "Llama 3.1 70B", "precision": label, "gpus": 256,
            "layout": {"GBS": 512, "MBS": 16, "seq": 8192, "FSDP": 32, "TP": 8, "PP": 1, "CP": 1, "VP": None,
                       "EP": 1},
            "published": pub,
            "step_time_s": round(512 * 8192 / (tok * 256), 6),
            "conversion": f"step = local batch 16 x FSDP 32 x seq 8192 / (tokens/s/GPU x 256) = 512 x 8192 / ({tok} x 256)",
            "assumed": [f"topology {H100}"] + TORCHTITAN + [
                "seq 8192 (the llama3_70b.toml of the run's torchtitan commit; the page states no sequence length)",
                "torchtitan's TP plan: sequence-parallel norms (sequence_parallel true), loss parallel (vocab_parallel)",
            ] + (["AsyncTP as tp_comm_overlap (each TP all-gather/reduce-scatter beside its GEMM)"] if async_tp else [])
              + (FP8 if quant != "bf16" else []) + ([TT_FP8_GATHER, TT_MEMORY_CMP] if memory else []),
            "groups": ["H100", "fp8" if quant != "bf16" else "bf16", "dense", "compile", "scale"]
                      + (["tp-overlap"] if async_tp else []),
            "scenario": {"cluster": cluster("H100", 256), "model": {"preset": "llama3-70b"}, "training": training,
                         "parallelism": par}}


TT_MEMORY = "torchtitan's logged memory: torch.cuda.max_memory_reserved, max over GPUs"
TT_FP8_GATHER = ("Float8 with FSDP float8 all-gather (torchtitan's documented Float8 setting of these tables) as "
                 "precision.params fp8: fp8 GEMMs and 1-byte gathered weights")
TT_MEMORY_CMP = ("memory compared as the model's reserved estimate: peak_allocated_bytes + fragmentation_bytes (the "
                 "caching allocator's reserved bytes; CUDA context and NCCL buffers are outside it)")
ROWS += [
    tt_70b("tt2412-llama31-70b-h100-fp8", "fp8tw", False, 829, dict(TT_2412, section="Table 4, 2D"), 71.9),
    tt_70b("tt2412-llama31-70b-h100-fp8-asynctp", "fp8tw", True, 876, dict(TT_2412, section="Table 4, 2D + AsyncTP"),
           67.6),
    tt_70b("tt2506-llama31-70b-h100-bf16", "bf16", False, 597.3),
    tt_70b("tt2506-llama31-70b-h100-bf16-asynctp", "bf16", True, 652.4),
    tt_70b("tt2506-llama31-70b-h100-fp8tw", "fp8tw", False, 809.8),
    {"id": "tt2412-llama31-8b-32k-h100-fp8", "source": dict(TT_2412, section="Table 2, FSDP 8, CP 1, seq 32768"),
     "system": "Grand Teton H100 96GB (500 W)", "model": "Llama 3.1 8B", "precision": "Float8 (torchao)", "gpus": 8,
     "layout": {"GBS": 8, "MBS": 1, "seq": 32768, "FSDP": 8, "TP": 1, "PP": 1, "CP": 1, "VP": None, "EP": 1},
     "published": {"metric": "tokens/s/GPU", "value": 3890, "memory_GiB": 83.9, "memory_metric": TT_MEMORY},
     "step_time_s": round(8 * 32768 / (3890 * 8), 6),
     "conversion": "step = local batch 1 x FSDP 8 x seq 32768 / (tokens/s/GPU x 8) = 8 x 32768 / (3890 x 8)",
     "assumed": [f"topology {H100}"] + TORCHTITAN + [TT_FP8_GATHER, TT_MEMORY_CMP],
     "groups": ["H100", "fp8", "dense", "compile"],
     "scenario": {"cluster": cluster("H100", 8), "model": {"preset": "llama3-8b", "seq_len": 32768},
                  "training": {"global_batch": 8, "micro_batch": 1, "recompute": "full",
                               "precision": {"params": "fp8"}},
                  "parallelism": {"dp": 8, "zero": 3}}},
]

#: rows collected from the same sources that today's scenario schema cannot describe (not counted)
NOT_EXPRESSIBLE = [
    {"id": "mb2604-llama31-405b-gb200-nvfp4", "source": dict(MB, section="26.04.01, LLAMA3.1_405B, DGX-GB200 NVFP4"),
     "published": {"metric": "tokens/s/GPU", "value": 1184},
     "layout": "256 GPUs, GBS 1536, MBS 1, seq 8192, TP4 PP16 VP8",
     "not_expressible": "NVFP4: training.precision has no 4-bit format (fp32, bf16, fp16, fp8)"},
    {"id": "mb2604-deepseekv3-b200-mxfp8", "source": dict(MB, section="26.04.01, DeepSeekV3, DGX-B200 MXFP8"),
     "published": {"metric": "tokens/s/GPU", "value": 3328},
     "layout": "256 GPUs, GBS 4096, MBS 1, seq 4096, PP8 VP2 EP32",
     "not_expressible": "MLA (low-rank compressed q/kv with decoupled RoPE) and MTP are not in the model schema"},
    {"id": "mb2604-nemotron3-super-b200-mxfp8", "source": dict(MB, section="26.04.01, Nemotron_3_Super, DGX-B200"),
     "published": {"metric": "tokens/s/GPU", "value": 6400},
     "layout": "64 GPUs, GBS 512, MBS 1, seq 8192, EP64",
     "not_expressible": "hybrid Mamba-2 / attention / MoE layers: the schema has only attention blocks"},
    {"id": "mb2606-kimi-k2-gb300-mxfp8", "source": dict(MB, section="26.06, Kimi_K2, DGX-GB300"),
     "published": {"metric": "tokens/s/GPU", "value": 5372},
     "layout": "256 GPUs, GBS 4096, MBS 2, seq 4096, PP4 VP4 EP64",
     "not_expressible": "MLA attention, the Muon optimizer and a GB300 preset are not in the schema"},
    {"id": "mb2606-lora-llama3-70b-h100-fp8", "source": dict(MB, section="26.06, LoRA Performance, LLAMA3_70B"),
     "published": {"metric": "tokens/s/GPU", "value": 2643},
     "layout": "8 GPUs, GBS 32, MBS 1, seq 4096, TP2 PP4 VP20",
     "not_expressible": "LoRA: frozen base weights (no weight gradients, adapter-only optimizer) are not in the schema"},
    {"id": "tt2506-llama31-8b-h100-bf16", "source": dict(TT_ASYNC, section="Llama3 8b on 64 H100s, bfloat16"),
     "published": {"metric": "tokens/s/GPU", "value": 4378},
     "layout": "64 GPUs, FSDP 8 x TP 8, compile, per-op SAC, local batch 12",
     "not_expressible": "per-op selective activation checkpointing (torchtitan's op policy: every other matmul "
                        "saved) is not a recompute option (none, selective = attention only, full)"},
    {"id": "tt2506-trainy-llama31-8b-h200-fp8", "source": dict(TT_H200, section="Results, NUM_NODES 4"),
     "published": {"metric": "tokens/s/GPU", "value": 10938, "memory_GiB": 47.96},
     "layout": "32 H200, FSDP 32, compile, Float8, local batch 2, seq 8192 (llama3_8b.toml: AC selective op)",
     "not_expressible": "per-op selective activation checkpointing (llama3_8b.toml at torchtitan e7c0cae: "
                        "selective_ac_option op)"},
    {"id": "tt2412-llama31-405b-h100-interleaved", "source": dict(TT_2412, section="Table 5, Interleaved 1F1B"),
     "published": {"metric": "tokens/s/GPU", "value": 128, "memory_GiB": 72.7},
     "layout": "512 GPUs, FSDP 8 x TP 8 x PP 8, local batch 32, GBS 256, full AC",
     "not_expressible": "FSDP (zero 3) with a pipeline is refused by the scenario check"},
]


def files() -> dict[str, str]:
    """Every file this script writes (path relative to the folder -> text)."""
    out = {}
    for r in ROWS:
        sc = {"name": r["id"],
              "description": f"{r['model']} on {r['gpus']} GPUs ({r['system']}, {r['precision']}); published "
                             f"{r['published']['value']} {r['published']['metric']} = {r['step_time_s']:.4g} s a step "
                             f"({r['conversion']}). Source and assumptions: rows.yaml of this folder.",
              **r["scenario"], "simulation": {"fidelity": "analytical"}}
        out[f"configs/{r['id']}.yaml"] = ("# Generated by make_configs.py (this folder); edit ROWS there, not this file.\n"
                                          + yaml.safe_dump(sc, sort_keys=False, width=120))
    table = {"rows": [{k: v for k, v in r.items() if k != "scenario"} | {"config": f"configs/{r['id']}.yaml"}
                      for r in ROWS],
             "not_expressible": NOT_EXPRESSIBLE}
    out["rows.yaml"] = ("# Generated by make_configs.py; the published rows of this study.\n"
                        + yaml.safe_dump(table, sort_keys=False, width=120))
    return out


def main() -> None:
    (HERE / "configs").mkdir(exist_ok=True)
    for rel, text in files().items():
        (HERE / rel).write_text(text, encoding="utf-8")
    print(f"{len(ROWS)} scenario files, {len(NOT_EXPRESSIBLE)} rows not expressible")


if __name__ == "__main__":
    main()
