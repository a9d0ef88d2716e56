"""Per-layer activation bytes of the memory model vs Korthikanti et al. 2022 (Table 2 formulas).

/work/shared/reference/published-runs.md section 14.3 (Korthikanti Table 2, 16-bit activations, GPT
layer with a 4h GeLU MLP, dropout and LayerNorm), per layer, in bytes:

* no parallelism ``sbh(34 + 5as/h)``; TP ``sbh(10 + 24/t + 5as/(ht))``; TP + SP ``sbh(34/t + 5as/(ht))``;
* TP + selective recompute ``sbh(10 + 24/t)``; TP + SP + selective ``34 sbh/t``; full recompute ``2 sbh``.

Models: GPT-3 175B and the 22B, 530B and 1T models of Korthikanti Table 3 (heads, hidden, layers,
tensor-parallel size; sequence 2048; micro-batch 4 for 22B, 1 for the others). ``5as/h`` is 80 for
GPT-3 and 64 for MT-NLG 530B (section 14.3). The memory model's Megatron layer
(``kernel_fusion='fused'``, eager attention: the score matrix is stored) must match within 3%.
"""

from __future__ import annotations

import pytest

from clustersim.workload.memory import layer_saved_bytes
from clustersim.workload.model import ModelDims

# name: (heads a, hidden h, layers L, tensor-parallel t, micro-batch b) -- Korthikanti Table 3
TABLE3 = {
    "22B": (64, 6144, 48, 8, 4),
    "175B": (96, 12288, 96, 8, 1),
    "530B": (128, 20480, 105, 8, 1),
    "1T": (160, 25600, 128, 8, 1),
}
SEQ = 2048


def korthikanti(a, h, s, b, t, case):
    sbh = s * b * h
    q = 5 * a * s / h
    return {"none-t1": sbh * (34 + q),
            "tp": sbh * (10 + 24 / t + q / t),
            "tp+sp": sbh * (34 / t + q / t),
            "tp+selective": sbh * (10 + 24 / t),
            "tp+sp+selective": 34 * sbh / t,
            "full": 2 * sbh}[case]


CASES = {"none-t1": (1, False, "none"), "tp": (None, False, "none"), "tp+sp": (None, True, "none"),
         "tp+selective": (None, False, "selective"), "tp+sp+selective": (None, True, "selective"),
         "full": (None, False, "full")}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("name", list(TABLE3))
def test_layer_bytes_match_korthikanti(name, case):
    a, h, layers, t_model, b = TABLE3[name]
    t_case, sp, recompute = CASES[case]
    t = t_case or t_model
    m = ModelDims(layers=layers, hidden=h, heads=a, kv_heads=a, ffn_hidden=4 * h, vocab=51200, seq_len=SEQ,
                  attention="eager")
    got = layer_saved_bytes(m, micro_batch=b, tp=t, sp=sp, recompute=recompute, kernel_fusion="fused")
    assert got == pytest.approx(korthikanti(a, h, SEQ, b, t, case), rel=0.03)


def test_score_term_values_of_section_14_3():
    """5as/h = 80 for GPT-3 and 64 for MT-NLG (the numbers quoted in section 14.3)."""
    for name, want in (("175B", 80), ("530B", 64)):
        a, h, *_ = TABLE3[name]
        assert 5 * a * SEQ / h == pytest.approx(want), f"{name=}, {want=}"


def test_flash_attention_drops_the_score_term():
    """FlashAttention stores no s x s matrix: the layer equals the selective-recompute formula."""
    a, h, layers, t, b = TABLE3["175B"]
    m = ModelDims(layers=layers, hidden=h, heads=a, kv_heads=a, ffn_hidden=4 * h, vocab=51200, seq_len=SEQ,
                  attention="flash")
    got = layer_saved_bytes(m, micro_batch=b, tp=t, sp=True, recompute="none", kernel_fusion="fused")
    assert got == pytest.approx(korthikanti(a, h, SEQ, b, t, "tp+sp+selective"), rel=0.03)


def test_eager_reference_layer_differs_only_by_what_it_stores():
    """The plain-PyTorch layer with flash attention keeps 32 sbh (Korthikanti's 34 without the two 1-byte
    dropout masks and the 2 sbh dropout output, plus the fused QKV output kept whole as SDPA's q/k/v views)
    and the norms' fp32 statistics (16 bytes per token)."""
    a, h, layers, _, b = TABLE3["175B"]
    m = ModelDims(layers=layers, hidden=h, heads=a, kv_heads=a, ffn_hidden=4 * h, vocab=51200, seq_len=SEQ)
    got = layer_saved_bytes(m, micro_batch=b, kernel_fusion="none")
    assert got == pytest.approx((32 * h + 16 + 4 * a) * SEQ * b)  # + fp32 log-sum-exp, 4 bytes per head
