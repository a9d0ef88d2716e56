"""Model presets (published architectures) and defaults of the model fields.

Sources: GPT-3 (Brown et al. 2020, Table 2.1; vocab 51200 padded as Megatron-LM),
Llama 3 (arXiv 2407.21783, Table 3), Megatron-LM/Core README configurations.
"""

from __future__ import annotations

MODEL_DEFAULTS: dict[str, object] = {
    "mlp": "gelu",
    "norm": "layernorm",
    "bias": False,
    "tied_embeddings": False,
    "position_embedding": "learned",
    "attention": "flash",
}

_LLAMA = {"mlp": "swiglu", "norm": "rmsnorm", "bias": False, "tied_embeddings": False,
          "position_embedding": "rope", "attention": "flash"}

MODEL_PRESETS: dict[str, dict[str, object]] = {
    "gpt-125m": {"layers": 12, "hidden": 768, "heads": 12, "vocab": 50304, "seq_len": 2048},
    "gpt-350m": {"layers": 24, "hidden": 1024, "heads": 16, "vocab": 50304, "seq_len": 2048},
    "gpt-1b": {"layers": 16, "hidden": 2048, "heads": 16, "vocab": 50304, "seq_len": 2048},
    "gpt3-175b": {"layers": 96, "hidden": 12288, "heads": 96, "vocab": 51200, "seq_len": 2048, "bias": True},
    "llama3-8b": {"layers": 32, "hidden": 4096, "heads": 32, "kv_heads": 8, "ffn_hidden": 14336,
                  "vocab": 128256, "seq_len": 8192, **_LLAMA},
    "llama3-70b": {"layers": 80, "hidden": 8192, "heads": 64, "kv_heads": 8, "ffn_hidden": 28672,
                   "vocab": 128256, "seq_len": 8192, **_LLAMA},
    "llama3-405b": {"layers": 126, "hidden": 16384, "heads": 128, "kv_heads": 8, "ffn_hidden": 53248,
                    "vocab": 128256, "seq_len": 8192, **_LLAMA},
}
