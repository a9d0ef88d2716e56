"""``clustersim scenario from-megatron "ARGS"``: Megatron-LM ``pretrain_gpt.py`` arguments as a scenario.

The argument names are Megatron-LM's own (``megatron/training/arguments.py``), parsed here without
Megatron installed, with Megatron's defaults where an argument is left out: biases on
(``--disable-bias-linear`` turns them off), tied embeddings (``--untie-embeddings-and-output-weights``),
learned absolute positions, LayerNorm, ``ffn_hidden = 4h`` (with ``--swiglu``: ``int(8h/3 / 64) * 64``),
the GPT-2 vocabulary of 50,257 tokens padded to a multiple of ``128 x tp``
(``--make-vocab-size-divisible-by``), gradient reduction after the backward (``--overlap-grad-reduce``
moves it into the backward) and the data-parallel degree ``GPUs / (tp pp cp)``.

ARGS is the argument string, or a launch script (the file's ``--`` arguments are read; shell variables
such as ``$GPUS_PER_NODE`` are left unresolved and only matter where clustersim needs their value).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from clustersim.config.input_text import read_input_text
from clustersim.errors import ClusterSimError
from clustersim.importers.build import Imported, build_scenario, cluster_for
from clustersim.importers.hf import parameter_report

#: arguments that do not change the simulated step (optimizer hyper-parameters, data, I/O, logging, launcher)
_INERT = {
    "lr", "min-lr", "lr-decay-style", "lr-decay-iters", "lr-warmup-fraction", "lr-warmup-iters", "weight-decay",
    "adam-beta1", "adam-beta2", "adam-eps", "clip-grad", "init-method-std", "train-iters", "train-samples",
    "data-path", "vocab-file", "merge-file", "split", "log-interval", "save-interval", "eval-interval", "save",
    "load", "eval-iters", "tensorboard-dir", "seed", "tokenizer-type", "tokenizer-model", "distributed-backend",
    "use-mcore-models", "transformer-impl", "attention-dropout", "hidden-dropout", "max-position-embeddings",
    "nproc_per_node", "nnodes", "master_addr", "master_port", "node_rank", "use-flash-attn",
    "no-async-tensor-model-parallel-allreduce", "log-throughput", "wandb-project", "exit-duration-in-mins", "data-cache-path",
    "moe-router-load-balancing-type", "moe-aux-loss-coeff", "moe-grouped-gemm", "moe-router-dtype", "rotary-base",
    "norm-epsilon", "make-vocab-size-divisible-by", "rampup-batch-size", "overlap-param-gather", "ckpt-format",
    "no-gradient-accumulation-fusion", "no-bias-gelu-fusion", "no-bias-swiglu-fusion", "mock-data",
    "moe-router-score-function", "moe-router-enable-expert-bias", "moe-router-topk-scaling-factor",
    "moe-router-num-groups", "moe-router-group-topk", "mtp-num-layers", "apply-layernorm-1p",
}


def parse_args(text: str) -> dict[str, list[str]]:
    """Megatron-style arguments: ``{"num-layers": ["96"], "bf16": []}`` (the ``--`` dropped; a name's values
    are the words up to the next ``--`` word; shell comments and line continuations removed).

    >>> parse_args("--num-layers 96 --bf16 --rampup-batch-size 16 16 5859375 # a comment")
    {'num-layers': ['96'], 'bf16': [], 'rampup-batch-size': ['16', '16', '5859375']}
    """
    try:
        words = shlex.split(text, comments=True)
    except ValueError as exc:
        raise ClusterSimError(f"cannot split the arguments: {exc}") from None
    out: dict[str, list[str]] = {}
    name = None
    for w in words:
        if w.startswith("--") and len(w) > 2:
            name, _, value = w[2:].partition("=")
            out[name] = [value] if value else []
        elif name is not None:
            out[name].append(w)
    return out


class _Args:
    """Typed access to the parsed arguments; every read name is recorded (the rest are warned about)."""

    def __init__(self, args: dict[str, list[str]], source: str | None):
        self.args, self.source, self.read = args, source, set()

    def has(self, name: str) -> bool:
        self.read.add(name)
        return name in self.args

    def int(self, name: str, default: Any = None) -> Any:
        self.read.add(name)
        vals = self.args.get(name)
        if not vals:
            return default
        try:
            return int(vals[0])
        except ValueError:
            raise ClusterSimError(f"needs an integer, got {vals[0]!r} (resolve the shell variable first)",
                                  file=self.source, field=f"--{name}") from None

    def str(self, name: str, default: str | None = None) -> str | None:
        self.read.add(name)
        vals = self.args.get(name)
        return vals[0] if vals else default


def _model(a: _Args, tp: int, notes: list[str]) -> dict:
    h = a.int("hidden-size")
    for name in ("num-layers", "hidden-size", "num-attention-heads", "seq-length"):
        if a.int(name) is None:
            raise ClusterSimError("required argument is missing", file=a.source, field=f"--{name}")
    swiglu = a.has("swiglu")
    ffn = a.int("ffn-hidden-size", int(8 * h / 3 / 64) * 64 if swiglu else 4 * h)
    pad = a.int("make-vocab-size-divisible-by", 128) * tp
    vocab = a.int("vocab-size")
    if vocab is None:
        vocab = 50257
        notes.append("vocabulary: the GPT-2 BPE's 50,257 tokens (--vocab-size not given)")
    vocab = -(-vocab // pad) * pad
    pos = a.str("position-embedding-type", "rope" if a.has("use-rotary-position-embeddings") else "learned_absolute")
    model = {"layers": a.int("num-layers"), "hidden": h, "heads": a.int("num-attention-heads"), "ffn_hidden": ffn,
             "vocab": vocab, "seq_len": a.int("seq-length"), "mlp": "swiglu" if swiglu else "gelu",
             "norm": "rmsnorm" if a.str("normalization", "LayerNorm") == "RMSNorm" else "layernorm",
             "bias": not a.has("disable-bias-linear"),
             "tied_embeddings": not a.has("untie-embeddings-and-output-weights"),
             "position_embedding": {"rope": "rope", "none": "none"}.get(pos, "learned"),
             "attention": "eager" if a.str("attention-backend", "auto") in ("unfused", "local") else "flash"}
    if a.has("group-query-attention"):
        model["kv_heads"] = a.int("num-query-groups", 1)
    if a.int("kv-channels") and a.int("kv-channels") * model["heads"] != h:
        model["head_dim"] = a.int("kv-channels")
    if a.has("multi-latent-attention"):
        model["mla"] = {"q_lora_rank": a.int("q-lora-rank"), "kv_lora_rank": a.int("kv-lora-rank", 512),
                        "qk_nope_head_dim": a.int("qk-head-dim", 128), "qk_rope_head_dim": a.int("qk-pos-emb-head-dim", 64),
                        "v_head_dim": a.int("v-head-dim", 128)}
        model["kv_heads"] = model["heads"]
    if a.int("num-experts"):
        model["moe"] = _moe(a, ffn)
    return model


def _moe(a: _Args, ffn: int) -> dict:
    moe = {"experts": a.int("num-experts"), "top_k": a.int("moe-router-topk", 2),
           "expert_ffn_hidden": a.int("moe-ffn-hidden-size", ffn)}
    shared = a.int("moe-shared-expert-intermediate-size")
    if shared:
        moe["shared_experts"] = max(1, shared // moe["expert_ffn_hidden"])
    freq = a.str("moe-layer-freq", "1")
    if freq.isdigit():
        moe["moe_every"] = int(freq)
    elif freq.replace(" ", "").startswith("([0]*"):  # "([0]*3+[1]*58)": dense first layers, then every layer MoE
        try:
            moe["first_dense_layers"] = int(freq.replace(" ", "")[5:].split(")")[0].split("+")[0])
        except ValueError:
            raise ClusterSimError(f"pattern {freq!r} not understood", file=a.source, field="--moe-layer-freq") from None
    else:
        raise ClusterSimError(f"pattern {freq!r} not understood (an integer or ([0]*K+[1]*N))", file=a.source,
                              field="--moe-layer-freq")
    return moe


def _training(a: _Args, notes: list[str]) -> dict:
    gran = a.str("recompute-granularity")
    recompute = "full" if gran == "full" else ("selective" if gran == "selective" or a.has("recompute-activations")
                                               else "none")
    if a.int("recompute-num-layers") is not None or a.str("recompute-method"):
        notes.append("--recompute-method/--recompute-num-layers: every layer is recomputed (per-layer choice not read)")
    fp16, bf16 = a.has("fp16"), a.has("bf16")
    dtype = "fp16" if fp16 and not bf16 else "bf16"
    if a.str("fp8-format") or a.has("fp8-hybrid"):
        notes.append("FP8 GEMMs (--fp8-format) are costed at 16-bit")
    if a.has("rampup-batch-size"):
        notes.append("--rampup-batch-size: the steady global batch is simulated")
    return {"global_batch": a.int("global-batch-size", a.int("micro-batch-size", 1)),
            "micro_batch": a.int("micro-batch-size", 1), "recompute": recompute,
            "optimizer": "sgd" if a.str("optimizer") == "sgd" else "adamw",
            "precision": {"params": dtype, "grads": "fp32", "optimizer_states": "fp32", "master_weights": True}}


def _parallelism(a: _Args, layers: int) -> dict:
    tp, pp = a.int("tensor-model-parallel-size", 1), a.int("pipeline-model-parallel-size", 1)
    par: dict[str, Any] = {"tp": tp, "pp": pp, "cp": a.int("context-parallel-size", 1),
                           "ep": a.int("expert-model-parallel-size", 1),
                           "expert_tp": a.int("expert-tensor-parallel-size", 1),
                           "sequence_parallel": a.has("sequence-parallel") and tp > 1,
                           "tp_comm_overlap": a.has("tp-comm-overlap") and tp > 1,
                           "zero": 1 if a.has("use-distributed-optimizer") else 0,
                           "dp_overlap": a.has("overlap-grad-reduce"),
                           "ep_comm_overlap": a.has("overlap-moe-expert-parallel-comm")}
    per_v = a.int("num-layers-per-virtual-pipeline-stage")
    v = a.int("num-virtual-stages-per-pipeline-rank") or (layers // (pp * per_v) if per_v else 1)
    if v > 1:
        par.update(virtual_stages=v, schedule="interleaved")
    if a.str("moe-token-dispatcher-type") == "allgather":
        par["ep_dispatcher"] = "allgather"
    defaults = {"pp": 1, "cp": 1, "ep": 1, "expert_tp": 1, "sequence_parallel": False, "tp_comm_overlap": False,
                "ep_comm_overlap": False}
    return {k: val for k, val in par.items() if k not in defaults or val != defaults[k]}


def scenario_from_megatron(args: str, *, topology: str, gpus: int | None = None, nodes: int | None = None,
                           name: str = "megatron") -> Imported:
    """The scenario of Megatron-LM arguments (a string, or the path of a launch script) on ``topology``.

    Without ``gpus``/``nodes`` the cluster is the smallest the layout runs on (``dp = 1``: ``tp x pp x cp``
    GPUs, whole nodes of the topology).
    """
    source = None
    if "--" not in args and Path(args).is_file():
        source, args = args, read_input_text(args, what="Megatron launch script")
    a = _Args(parse_args(args), source)
    notes: list[str] = []
    tp = a.int("tensor-model-parallel-size", 1)
    model = _model(a, tp, notes)
    training, par = _training(a, notes), _parallelism(a, model["layers"])
    if gpus is None and nodes is None:
        nodes, gpus = cluster_for(topology, par.get("tp", 1) * par.get("pp", 1) * par.get("cp", 1))
    data = build_scenario(name, model=model, topology=topology, gpus=gpus, nodes=nodes, training=training,
                          parallelism=par, description="From Megatron-LM pretrain_gpt.py arguments.", source=source)
    warnings = [f"argument --{k} not read (check that it does not change the step)"
                for k in a.args if k not in a.read and k not in _INERT]
    report = parameter_report(model)
    report["layout"] = {k: data["parallelism"].get(k, 1) for k in ("dp", "tp", "pp", "cp", "ep")}
    return Imported(data, warnings, notes, report)
