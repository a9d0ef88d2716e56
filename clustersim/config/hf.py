"""A Hugging Face ``config.json`` as the fields of a scenario's ``model:`` section.

The families whose layer the model schema expresses, with the config keys each reads (names as
``transformers`` writes them):

* dense: ``llama``, ``mistral``, ``qwen2``, ``qwen3`` (``hidden_size``, ``num_hidden_layers``,
  ``num_attention_heads``, ``num_key_value_heads``, ``head_dim``, ``intermediate_size``, ``vocab_size``,
  ``tie_word_embeddings``, ``attention_bias``);
* mixture of experts: ``mixtral`` (``num_local_experts``, ``num_experts_per_tok``; experts as wide as
  ``intermediate_size``), ``qwen2_moe`` / ``qwen3_moe`` (``num_experts``, ``moe_intermediate_size``,
  ``decoder_sparse_step``, ``mlp_only_layers``, ``shared_expert_intermediate_size``), ``deepseek_v2`` /
  ``deepseek_v3`` (``n_routed_experts``, ``n_shared_experts``, ``first_k_dense_replace``,
  ``moe_layer_freq`` and multi-head latent attention: ``q_lora_rank``, ``kv_lora_rank``,
  ``qk_nope_head_dim``, ``qk_rope_head_dim``, ``v_head_dim``), ``gpt_oss`` (``num_local_experts``,
  ``experts_per_token``, ``head_dim``).

Every family has gated MLPs (SwiGLU: three matrices), RMSNorm and rotary embeddings. The sequence
length defaults to the length the model was pre-trained at: ``rope_scaling.original_max_position_embeddings``
when the config extends its context (DeepSeek-V3 4,096, Llama 3.1 8,192), else ``max_position_embeddings``.

What the schema cannot express is said, never dropped silently: a key this module does not know is
named in a warning; a known feature it leaves out (sliding-window layers, group-limited routing,
attention sinks, q/k norms, multi-token prediction layers) in a note with its size; a configuration it
cannot represent (another ``model_type``, a non-gated activation, dense layers between MoE layers that
are not the first ones) is refused with the key and the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clustersim.config.input_text import read_input_json, resolve_input
from clustersim.errors import ClusterSimError

DENSE = ("llama", "mistral", "qwen2", "qwen3")
MOE = ("mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v2", "deepseek_v3", "gpt_oss")
SUPPORTED = DENSE + MOE

#: gated activations of these families (SwiGLU / GeGLU: gate, up and down matrices)
_GATED = ("silu", "swish", "swiglu", "gelu", "gelu_pytorch_tanh", "gelu_new")

#: keys read into the model fields or that do not change the training step's work (tokens ids, init,
#: epsilon, rope base, dtype of the checkpoint, inference-only caches, auxiliary-loss weights)
_READ_OR_INERT = {
    "architectures", "model_type", "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
    "head_dim", "intermediate_size", "vocab_size", "tie_word_embeddings", "attention_bias", "mlp_bias", "hidden_act",
    "max_position_embeddings", "rope_scaling", "rope_parameters", "rope_theta", "rms_norm_eps", "initializer_range",
    "bos_token_id", "eos_token_id", "pad_token_id", "torch_dtype", "dtype", "transformers_version", "use_cache",
    "attention_dropout", "pretraining_tp", "auto_map", "_name_or_path", "quantization_config", "output_router_logits",
    "router_aux_loss_coef", "router_jitter_noise", "aux_loss_alpha", "seq_aux", "norm_topk_prob", "routed_scaling_factor",
    "scoring_func", "topk_method", "ep_size", "num_experts_per_tok", "experts_per_token", "num_local_experts",
    "num_experts", "moe_intermediate_size", "decoder_sparse_step", "mlp_only_layers", "shared_expert_intermediate_size",
    "n_routed_experts", "n_shared_experts", "first_k_dense_replace", "moe_layer_freq", "q_lora_rank", "kv_lora_rank",
    "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "num_nextn_predict_layers", "n_group", "topk_group",
    "use_sliding_window", "sliding_window", "max_window_layers", "layer_types", "initial_context_length",
    "swiglu_limit", "rope_interleave", "qk_layernorm", "use_qk_norm", "partial_rotary_factor", "mtp_num_layers",
}


@dataclass
class HFModel:
    """The model fields read from a ``config.json`` and what they leave out."""

    fields: dict[str, Any]  # the ``model:`` section (seq_len included)
    model_type: str
    warnings: list[str] = field(default_factory=list)  # unknown keys
    notes: list[str] = field(default_factory=list)  # known features the schema leaves out
    mtp_layers: int = 0  # DeepSeek multi-token-prediction layers (not in the model fields)


def _int(cfg: dict, key: str, file: str | None, default: Any = ...) -> int:
    value = cfg.get(key, default)
    if value is ...:
        raise ClusterSimError("required key is missing", file=file, field=key)
    if value is None and default is None:
        return None  # type: ignore[return-value]
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ClusterSimError(f"must be a non-negative integer, got {value!r}", file=file, field=key)
    return value


def pretrain_seq_len(cfg: dict) -> int:
    """The sequence length the model was pre-trained at (see the module docstring)."""
    for key in ("rope_scaling", "rope_parameters"):
        rs = cfg.get(key)
        if isinstance(rs, dict) and isinstance(rs.get("original_max_position_embeddings"), int):
            return rs["original_max_position_embeddings"]
    if isinstance(cfg.get("initial_context_length"), int):  # gpt-oss
        return cfg["initial_context_length"]
    return cfg.get("max_position_embeddings") or 4096


def model_fields(cfg: dict, file: str | None = None) -> HFModel:
    """The ``model:`` fields of a parsed ``config.json`` (see the module docstring).

    Examples
    --------
    >>> hf = model_fields({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
    ...                    "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100,
    ...                    "max_position_embeddings": 256, "hidden_act": "silu", "colour": "red"})
    >>> hf.fields["layers"], hf.fields["mlp"], hf.fields["seq_len"], hf.warnings
    (2, 'swiglu', 256, ["unknown key 'colour' (not read: check that it does not change the layer)"])
    """
    if "text_config" in cfg or "vision_config" in cfg:
        raise ClusterSimError("a multimodal config: give the config of its language model (text_config)",
                              file=file, field="text_config" if "text_config" in cfg else "vision_config")
    mt = cfg.get("model_type")
    if mt not in SUPPORTED:
        raise ClusterSimError(f"{mt!r} is not supported (supported: {', '.join(SUPPORTED)})",
                              file=file, field="model_type")
    act = cfg.get("hidden_act", "silu")
    if act not in _GATED:
        raise ClusterSimError(f"activation {act!r} is not a gated MLP the schema expresses ({', '.join(_GATED)})",
                              file=file, field="hidden_act")
    hidden, heads = _int(cfg, "hidden_size", file), _int(cfg, "num_attention_heads", file)
    out: dict[str, Any] = {
        "layers": _int(cfg, "num_hidden_layers", file), "hidden": hidden, "heads": heads,
        "kv_heads": _int(cfg, "num_key_value_heads", file, heads) or heads,
        "ffn_hidden": _int(cfg, "intermediate_size", file), "vocab": _int(cfg, "vocab_size", file),
        "seq_len": pretrain_seq_len(cfg), "mlp": "swiglu", "norm": "rmsnorm",
        "bias": bool(cfg.get("attention_bias", False)), "tied_embeddings": bool(cfg.get("tie_word_embeddings", False)),
        "position_embedding": "rope", "attention": "flash",
    }
    hf = HFModel(out, mt)
    head_dim = _int(cfg, "head_dim", file, None)
    if head_dim and head_dim * heads != hidden:  # decoupled attention width (Qwen3, GPT-OSS)
        out["head_dim"] = head_dim
    if mt in ("deepseek_v2", "deepseek_v3"):
        _deepseek(cfg, file, hf)
    elif mt != "gpt_oss" and mt in MOE:
        _qwen_mixtral(cfg, file, hf)
    elif mt == "gpt_oss":
        _gpt_oss(cfg, file, hf)
    _notes(cfg, hf)
    hf.warnings += [f"unknown key {k!r} (not read: check that it does not change the layer)"
                    for k in cfg if k not in _READ_OR_INERT]
    return hf


def _qwen_mixtral(cfg: dict, file: str | None, hf: HFModel) -> None:
    """Mixtral (every layer MoE, experts of ``intermediate_size``) and Qwen2/3-MoE."""
    out = hf.fields
    if hf.model_type == "mixtral":
        experts, width = _int(cfg, "num_local_experts", file), out["ffn_hidden"]
        out["moe"] = {"experts": experts, "top_k": _int(cfg, "num_experts_per_tok", file), "expert_ffn_hidden": width}
        return
    width = _int(cfg, "moe_intermediate_size", file)
    moe = {"experts": _int(cfg, "num_experts", file), "top_k": _int(cfg, "num_experts_per_tok", file),
           "expert_ffn_hidden": width, "moe_every": _int(cfg, "decoder_sparse_step", file, 1) or 1}
    dense = cfg.get("mlp_only_layers") or []
    if dense:
        if not isinstance(dense, list) or sorted(dense) != list(range(len(dense))):
            raise ClusterSimError(f"dense layers {dense!r} are not the first layers (the schema has "
                                  "model.moe.first_dense_layers only)", file=file, field="mlp_only_layers")
        moe["first_dense_layers"] = len(dense)
    shared = _int(cfg, "shared_expert_intermediate_size", file, 0) or 0
    if shared:
        if shared % width:
            raise ClusterSimError(f"shared expert width {shared} is not a multiple of moe_intermediate_size {width}",
                                  file=file, field="shared_expert_intermediate_size")
        moe["shared_experts"] = shared // width
        hf.notes.append("the shared expert's sigmoid gate (hidden weights per layer) is not modelled")
    out["moe"] = moe


def _deepseek(cfg: dict, file: str | None, hf: HFModel) -> None:
    """DeepSeek-V2/V3: MLA, shared experts, dense first layers, multi-token prediction apart."""
    out = hf.fields
    freq = cfg.get("moe_layer_freq", 1)
    if not isinstance(freq, int) or isinstance(freq, bool) or freq < 1:
        raise ClusterSimError(f"must be a positive integer, got {freq!r}", file=file, field="moe_layer_freq")
    out["moe"] = {"experts": _int(cfg, "n_routed_experts", file), "top_k": _int(cfg, "num_experts_per_tok", file),
                  "expert_ffn_hidden": _int(cfg, "moe_intermediate_size", file),
                  "shared_experts": _int(cfg, "n_shared_experts", file, 0) or 0,
                  "first_dense_layers": _int(cfg, "first_k_dense_replace", file, 0) or 0, "moe_every": freq}
    out["mla"] = {"q_lora_rank": _int(cfg, "q_lora_rank", file, None), "kv_lora_rank": _int(cfg, "kv_lora_rank", file),
                  "qk_nope_head_dim": _int(cfg, "qk_nope_head_dim", file),
                  "qk_rope_head_dim": _int(cfg, "qk_rope_head_dim", file), "v_head_dim": _int(cfg, "v_head_dim", file)}
    out.pop("head_dim", None)
    hf.mtp_layers = _int(cfg, "num_nextn_predict_layers", file, 0) or 0


def _gpt_oss(cfg: dict, file: str | None, hf: HFModel) -> None:
    """GPT-OSS: every layer MoE, experts of ``intermediate_size``, attention biases and sinks."""
    out = hf.fields
    k = cfg.get("num_experts_per_tok", cfg.get("experts_per_token"))
    out["moe"] = {"experts": _int(cfg, "num_local_experts", file),
                  "top_k": _int({"top_k": k}, "top_k", file), "expert_ffn_hidden": out["ffn_hidden"]}
    hf.notes.append("attention sinks (one learned logit per head) and the experts' biases are not modelled")


def _notes(cfg: dict, hf: HFModel) -> None:
    """Known features of the config that the schema leaves out, each said once."""
    types = cfg.get("layer_types") or []
    sliding = sum(t == "sliding_attention" for t in types) if isinstance(types, list) else 0
    mistral_window = hf.model_type in ("mistral", "mixtral") and cfg.get("sliding_window")
    if sliding or cfg.get("use_sliding_window") or mistral_window:
        hf.notes.append(f"sliding-window attention (window {cfg.get('sliding_window')}, "
                        f"{sliding or 'some'} layers) is modelled as full causal attention (an upper bound on its cost)")
    if cfg.get("n_group") and cfg.get("topk_group") and cfg.get("n_group") > 1:
        hf.notes.append(f"group-limited routing (n_group {cfg['n_group']}, topk_group {cfg['topk_group']}) is not "
                        "modelled; parallelism.ep_max_nodes limits the nodes a token's experts lie on")
    if hf.model_type in ("qwen3", "qwen3_moe"):
        hf.notes.append("the q/k RMSNorms of each head (2 x head_dim weights per layer) are not modelled")
    if hf.model_type in ("qwen2", "qwen2_moe"):
        hf.notes.append("the q/k/v projection biases are not modelled")
    if hf.mtp_layers:
        hf.notes.append(f"{hf.mtp_layers} multi-token-prediction layer(s) are not part of the model (reported apart)")
    if cfg.get("quantization_config"):
        hf.notes.append("quantization_config describes the released checkpoint; the training precision is the "
                        "scenario's training.precision")


def model_fields_from_file(path: str | Path, *, base: str | Path | None = None, field: str | None = None) -> dict:
    """The model fields of the ``config.json`` at ``path`` (relative to ``base`` when it lies there);
    a refusal names the config file and its key (or ``field`` when the file itself is at fault)."""
    p = resolve_input(path, base)
    try:
        cfg = read_input_json(p, what="Hugging Face config")
    except ClusterSimError as exc:
        raise ClusterSimError(exc.reason, file=exc.file, field=field) from None
    return model_fields(cfg, file=str(p)).fields
