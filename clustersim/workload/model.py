"""Transformer accounting: parameters, FLOPs and activation memory from the model fields.

Everything here is closed form and engine-free. Conventions (see ``docs/training.md``):

* FLOPs count a multiply-add as 2 FLOPs; a GEMM ``m x n x k`` costs ``2 m n k``.
* Backward GEMM FLOPs are twice the forward (dgrad + wgrad).
* **Model FLOPs** (for MFU) per token = ``6 * N_matmul + 12 * L * h * s``: ``N_matmul`` are the
  weights that take part in GEMMs (every linear layer of every transformer layer plus the LM
  head, never the embedding lookup or the norms), and the attention term counts the **full**
  ``s x s`` score matrix (QK^T and attention x V, forward + backward, no causal halving), the
  convention of Narayanan 2021, Korthikanti 2022 and Megatron-LM before March 2025. With
  ``h_kv = h`` and ``f = 4h`` this is Korthikanti's eq. 7, ``72 B L s h^2 (1 + s/6h + V/12hL)``.
* Activation bytes follow Korthikanti et al. 2022 Table 2 (16-bit activations, 1-byte dropout
  masks), generalised term by term to GQA (K and V scale with ``kv_heads/heads``) and to the
  MLP width ``f`` and SwiGLU.
"""

from __future__ import annotations

from dataclasses import dataclass

from clustersim.workload.moe import MoEDims

DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}


@dataclass(frozen=True)
class MLADims:
    """Multi-head latent attention widths (``model.mla``, DeepSeek-V2/V3).

    Examples
    --------
    >>> m = MLADims(q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128)
    >>> m.split_params(7168, 128), m.replicated_params(7168)  # DeepSeek-V3: 172.0M + 15.1M weights per layer
    (171966464, 15138816)
    """

    q_lora_rank: int | None
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int

    @classmethod
    def from_section(cls, s) -> "MLADims | None":
        """From a :class:`clustersim.config.scenario.MLASection` (None stays None)."""
        if s is None:
            return None
        return cls(s.q_lora_rank, s.kv_lora_rank, s.qk_nope_head_dim, s.qk_rope_head_dim, s.v_head_dim)

    @property
    def qk_head_dim(self) -> int:
        """Query/key width of one head: the no-rope and the rope parts."""
        return self.qk_nope_head_dim + self.qk_rope_head_dim

    def split_params(self, hidden: int, heads: int) -> int:
        """Weights split over TP ranks by heads: the query up-projection (or the full query projection),
        the key/value up-projection and the output projection."""
        q = (self.q_lora_rank or hidden) * heads * self.qk_head_dim
        kv_up = self.kv_lora_rank * heads * (self.qk_nope_head_dim + self.v_head_dim)
        return q + kv_up + heads * self.v_head_dim * hidden

    def replicated_params(self, hidden: int) -> int:
        """Weights every TP rank holds whole: the query and key/value down-projections."""
        q_down = hidden * self.q_lora_rank if self.q_lora_rank else 0
        return q_down + hidden * (self.kv_lora_rank + self.qk_rope_head_dim)

    @property
    def norm_params(self) -> int:
        """Gains of the RMSNorms on the latents (q_a_layernorm, kv_a_layernorm)."""
        return (self.q_lora_rank or 0) + self.kv_lora_rank

    @property
    def matrices(self) -> int:
        """Weight matrices of the attention: q down/up (or one q), kv down, kv up, output."""
        return 5 if self.q_lora_rank else 4


@dataclass(frozen=True)
class ModelDims:
    """The resolved model fields (every preset and default already applied).

    Examples
    --------
    >>> m = ModelDims(layers=2, hidden=64, heads=4, kv_heads=4, ffn_hidden=256, vocab=100, seq_len=16)
    >>> m.layer_matmul_params
    49152
    """

    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn_hidden: int
    vocab: int
    seq_len: int
    mlp: str = "gelu"
    norm: str = "layernorm"
    bias: bool = False
    tied_embeddings: bool = False
    position_embedding: str = "learned"
    attention: str = "flash"
    moe: MoEDims | None = None  # mixture-of-experts MLPs (None: dense)
    attn_head_dim: int | None = None  # model.head_dim when set (None: hidden / heads)
    mla: MLADims | None = None  # multi-head latent attention (None: Q/K/V projections)

    @classmethod
    def from_section(cls, m) -> "ModelDims":
        """Build from a :class:`clustersim.config.scenario.ModelSection` (already filled)."""
        return cls(layers=m.layers, hidden=m.hidden, heads=m.heads, kv_heads=m.kv_heads,
                   ffn_hidden=m.ffn_hidden, vocab=m.vocab, seq_len=m.seq_len, mlp=m.mlp, norm=m.norm,
                   bias=m.bias, tied_embeddings=m.tied_embeddings,
                   position_embedding=m.position_embedding, attention=m.attention,
                   moe=MoEDims.from_section(getattr(m, "moe", None)), attn_head_dim=getattr(m, "head_dim", None),
                   mla=MLADims.from_section(getattr(m, "mla", None)))

    # -- shapes ----------------------------------------------------------------------------
    @property
    def head_dim(self) -> int:
        """Query/key width of one attention head: ``model.head_dim``, MLA's ``qk_nope + qk_rope``, or h / a."""
        if self.mla is not None:
            return self.mla.qk_head_dim
        return self.attn_head_dim if self.attn_head_dim is not None else self.hidden // self.heads

    @property
    def v_head_dim(self) -> int:
        """Value width of one attention head (MLA's ``v_head_dim``; else the head width)."""
        return self.mla.v_head_dim if self.mla is not None else self.head_dim

    @property
    def q_hidden(self) -> int:
        """Width of Q: heads * head_dim (h unless the attention width is decoupled)."""
        return self.heads * self.head_dim

    @property
    def kv_hidden(self) -> int:
        """Width of K: kv_heads * head_dim (and of V when the value heads are as wide)."""
        return self.kv_heads * self.head_dim

    @property
    def v_hidden(self) -> int:
        """Width of V: kv_heads * v_head_dim."""
        return self.kv_heads * self.v_head_dim

    @property
    def attn_out_hidden(self) -> int:
        """Width of the attention output, the output projection's input: heads * v_head_dim."""
        return self.heads * self.v_head_dim

    @property
    def kv_pair_hidden(self) -> int:
        """Mean of the K and V widths (the width of one of the K/V pair a CP ring passes): kv_hidden unless MLA."""
        return (self.kv_hidden + self.v_hidden) // 2

    @property
    def attention_flops_head_dim(self) -> int:
        """Head width that makes ``4 b s^2 a d`` the FLOPs of QK^T (``d_qk``) plus PV (``d_v``): their mean."""
        return (self.head_dim + self.v_head_dim) // 2

    @property
    def mlp_in_width(self) -> int:
        """Output width of the first MLP GEMM: f (GELU) or 2f (SwiGLU gate + up fused)."""
        return 2 * self.ffn_hidden if self.mlp == "swiglu" else self.ffn_hidden

    # -- parameters ------------------------------------------------------------------------
    @property
    def layer_matmul_params(self) -> int:
        """Weights of one layer that enter GEMMs: Q, K, V, O (or MLA's projections) and the MLP matrices."""
        h, f = self.hidden, self.ffn_hidden
        mlp = (3 if self.mlp == "swiglu" else 2) * h * f
        return self.attention_matmul_params + mlp

    @property
    def attention_matmul_params(self) -> int:
        """Weights of Q, K, V and O of one layer (MLA: its five projections)."""
        return self.attention_split_params + self.attention_replicated_params

    @property
    def attention_split_params(self) -> int:
        """Attention weights split over TP ranks by heads: Q, K, V and O (MLA: the up- and output projections)."""
        h = self.hidden
        if self.mla is not None:
            return self.mla.split_params(h, self.heads)
        return h * self.q_hidden + h * self.kv_hidden + h * self.v_hidden + self.attn_out_hidden * h

    @property
    def attention_replicated_params(self) -> int:
        """Attention weights every TP rank holds whole: MLA's down-projections (0 without MLA)."""
        return self.mla.replicated_params(self.hidden) if self.mla is not None else 0

    @property
    def attention_matrices(self) -> int:
        """Attention weight tensors: the fused QKV and O (MLA: its four or five projections)."""
        return self.mla.matrices if self.mla is not None else 2

    @property
    def mlp_matrices(self) -> int:
        """Weight matrices of one MLP (or one expert): 3 with SwiGLU, else 2."""
        return 3 if self.mlp == "swiglu" else 2

    def is_moe_layer(self, index: int) -> bool:
        """Layer ``index`` (0-based) has routed experts instead of the dense MLP."""
        return self.moe is not None and self.moe.is_moe_layer(index)

    @property
    def moe_layers(self) -> int:
        """Layers with routed experts."""
        return sum(self.is_moe_layer(i) for i in range(self.layers))

    def _matmul_params_all_layers(self, active: bool) -> float:
        """GEMM weights of every layer (MoE layers: all experts, or the ``top_k`` a token uses when ``active``)."""
        n_moe = self.moe_layers
        total = (self.layers - n_moe) * self.layer_matmul_params
        if n_moe:
            total += n_moe * (self.attention_matmul_params
                              + self.moe.matmul_params(self.hidden, self.mlp_matrices, active))
        return total

    @property
    def active_params(self) -> float:
        """Parameters a token passes through (MoE layers: router, ``top_k`` routed and the shared experts)."""
        return (self._matmul_params_all_layers(active=True) + self.layers * self.layer_other_params
                + self.embedding_params + self.head_params)

    @property
    def layer_other_params(self) -> int:
        """Biases and norm weights of one layer (LayerNorm: gain + bias; RMSNorm: gain)."""
        h, f = self.hidden, self.ffn_hidden
        norms = 2 * (2 * h if self.norm == "layernorm" else h)
        if self.mla is not None:
            norms += self.mla.norm_params
        bias = 0
        if self.bias:
            bias = (self.q_hidden + self.kv_hidden + self.v_hidden) + h + (self.mlp_in_width + h)
        return norms + bias

    @property
    def layer_params(self) -> int:
        """All parameters of one transformer layer."""
        return self.layer_matmul_params + self.layer_other_params

    @property
    def embedding_params(self) -> int:
        """Token embedding V*h plus a learned position table s*h."""
        pos = self.seq_len * self.hidden if self.position_embedding == "learned" else 0
        return self.vocab * self.hidden + pos

    @property
    def head_params(self) -> int:
        """Final norm plus the LM head (0 extra weights when tied)."""
        fn = 2 * self.hidden if self.norm == "layernorm" else self.hidden
        return fn + (0 if self.tied_embeddings else self.vocab * self.hidden)

    @property
    def total_params(self) -> int:
        """Every parameter of the model."""
        if self.moe is not None:
            return (self._matmul_params_all_layers(active=False) + self.layers * self.layer_other_params
                    + self.embedding_params + self.head_params)
        return self.layers * self.layer_params + self.embedding_params + self.head_params

    # -- FLOPs -----------------------------------------------------------------------------
    def model_flops_per_token(self) -> float:
        """Model FLOPs per token of one training step (forward + backward, no recompute).

        ``6 * (L * layer_matmul_params + V * h) + 12 * L * h * s``; MoE layers count the weights a
        token is routed through (router, ``top_k`` routed and the shared experts).
        """
        n_mm = self._matmul_params_all_layers(active=True) + self.vocab * self.hidden
        if self.q_hidden == self.hidden and self.v_head_dim == self.head_dim:
            return 6.0 * n_mm + 12.0 * self.layers * self.hidden * self.seq_len
        # QK^T over the query/key width, PV over the value width: 6 L s a (d_qk + d_v)
        return 6.0 * n_mm + 6.0 * self.layers * self.seq_len * self.heads * (self.head_dim + self.v_head_dim)

    # -- activation memory -----------------------------------------------------------------
    def layer_activation_bytes(self, micro_batch: int, tp: int = 1, sp: bool = False,
                               recompute: str = "none", attention: str | None = None) -> float:
        """Activation bytes one transformer layer keeps for its backward, per GPU (Korthikanti Table 2).

        Terms (s b h units, 16-bit values, 1-byte dropout masks), for the GPT layer with ``f = 4h``
        and ``h_kv = h`` they add up to ``34 s b h + 5 a s^2 b``:

        * attention: LN output 2, Q 2, K 2 g/a, V 2 g/a, (eager: scores softmax 2as/h, dropout
          mask as/h, dropout output 2as/h), attention output 2, output dropout mask 1;
        * MLP: LN output 2, first GEMM output 2f/h (SwiGLU: 4f/h), activation output 2f/h,
          dropout mask 1;
        * the two norm inputs: 4.

        Of these the norm inputs, the two norm outputs (as attention and MLP inputs) and the two
        dropout masks (10 s b h) are replicated over TP ranks unless ``sp``. ``recompute='full'``
        keeps only the layer input (2 s b h, split by TP with SP); ``'selective'`` drops the
        s^2 terms (as flash attention does).
        """
        s, b, h, a = self.seq_len, micro_batch, self.hidden, self.heads
        sbh = s * b * h
        if recompute == "full":
            return 2.0 * sbh / (tp if sp else 1)
        att = attention or self.attention
        f = self.ffn_hidden / h
        # split over TP ranks (column/row-parallel tensors): Q, K, V, attention output (input of the O projection)
        q, k, v, o = self._attention_widths()
        split = 2 * q + 2 * k + 2 * v + 2 * o
        split += (4 * f if self.mlp == "swiglu" else 2 * f) + 2 * f
        # replicated without SP: 2 norm inputs (4), 2 norm outputs (4), 2 dropout masks (2)
        repl = 10.0
        quad = 0.0
        if att == "eager" and recompute != "selective":
            quad = 5.0 * a * s / h  # softmax output 2, dropout mask 1, dropout output 2 (x a s^2 b)
        per = (repl / (tp if sp else 1)) + split / tp + quad / tp
        if self.mla is not None:
            # the latents and their normed copies (16-bit), computed by every TP rank on the whole sequence
            ml = self.mla
            per += 2 * (2 * (ml.q_lora_rank or 0) + ml.kv_lora_rank + ml.qk_rope_head_dim + ml.kv_lora_rank) / h
        return per * sbh

    def _attention_widths(self) -> tuple[float, float, float, float]:
        """Widths of Q, K, V and the attention output in units of h (1, g, g, 1 with ``g = kv_heads/heads``
        unless the attention width is decoupled from h or MLA sets it)."""
        if self.mla is None and self.attn_head_dim is None:
            g = self.kv_heads / self.heads
            return 1, g, g, 1
        h = self.hidden
        return self.q_hidden / h, self.kv_hidden / h, self.v_hidden / h, self.attn_out_hidden / h
