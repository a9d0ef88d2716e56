"""Memory accounting against Korthikanti et al. 2022 (Table 2) and the ZeRO paper (§5)."""

from __future__ import annotations

import pytest

from clustersim.config.scenario import PrecisionSection, Scenario
from clustersim.workload.compute import ComputeModel
from clustersim.workload.memory import sharded_states, state_bytes_per_param
from clustersim.workload.model import ModelDims
from clustersim.workload.transformer import TransformerStep

GPT3 = ModelDims(layers=96, hidden=12288, heads=96, kv_heads=96, ffn_hidden=4 * 12288, vocab=51200,
                 seq_len=2048, attention="eager")


@pytest.mark.parametrize("b", [1, 4])
@pytest.mark.parametrize("t", [1, 2, 8])
def test_activation_formulas(b, t):
    s, h, a = GPT3.seq_len, GPT3.hidden, GPT3.heads
    sbh = s * b * h
    q = 5 * a * s / h
    if t == 1:
        assert GPT3.layer_activation_bytes(b) == pytest.approx(sbh * (34 + q))
    assert GPT3.layer_activation_bytes(b, t) == pytest.approx(sbh * (10 + 24 / t + q / t))
    assert GPT3.layer_activation_bytes(b, t, sp=True) == pytest.approx(sbh * (34 / t + q / t))
    assert GPT3.layer_activation_bytes(b, t, recompute="selective") == pytest.approx(sbh * (10 + 24 / t))
    assert GPT3.layer_activation_bytes(b, t, sp=True, recompute="selective") == pytest.approx(34 * sbh / t)
    assert GPT3.layer_activation_bytes(b, t, recompute="full") == pytest.approx(2 * sbh)
    # flash attention never stores the s^2 terms
    assert GPT3.layer_activation_bytes(b, t, attention="flash") == pytest.approx(sbh * (10 + 24 / t))


def test_gqa_and_swiglu_change_the_split_terms():
    m = ModelDims(layers=1, hidden=4096, heads=32, kv_heads=8, ffn_hidden=14336, vocab=10, seq_len=8192,
                  mlp="swiglu", attention="flash")
    sbh = 8192 * 4096
    g, f = 8 / 32, 14336 / 4096
    expect = 10 + 2 + 4 * g + 2 + 4 * f + 2 * f
    assert m.layer_activation_bytes(1) == pytest.approx(sbh * expect)


def test_model_state_bytes_per_param():
    mixed = PrecisionSection()  # bf16 params, fp32 main grads, fp32 master + moments
    assert state_bytes_per_param(mixed, "adamw").total == 18
    zero_paper = PrecisionSection(grads="bf16")
    assert state_bytes_per_param(zero_paper, "adamw").total == 16
    pure = PrecisionSection(grads="bf16", optimizer_states="bf16", master_weights=False)
    assert state_bytes_per_param(pure, "adamw").total == 8
    fp32 = PrecisionSection(params="fp32", grads="fp32", master_weights=True)
    assert state_bytes_per_param(fp32, "adamw").total == 16  # no separate master for fp32 weights
    assert state_bytes_per_param(mixed, "sgd").total == 10


def test_zero_paper_example():
    """ZeRO §5: 7.5B params, N_d = 64: 120 GB, then 31.4, 16.6, 1.88 GB."""
    sb = state_bytes_per_param(PrecisionSection(grads="bf16"), "adamw")
    got = [sum(sharded_states(7.5e9, sb, z, 64).values()) / 1e9 for z in (0, 1, 2, 3)]
    assert got == pytest.approx([120.0, 31.4, 16.6, 1.875], abs=0.05)


def test_megatron_distributed_optimizer_table():
    """bf16 params / fp32 grads: 18 bytes, 6 + 12/d with the optimizer sharded (ZeRO-1)."""
    sb = state_bytes_per_param(PrecisionSection(), "adamw")
    assert sum(sharded_states(1.0, sb, 1, 8).values()) == pytest.approx(6 + 12 / 8)


def _step(**par):
    sc = Scenario.model_validate({
        "name": "m", "cluster": {"topology": "x"},
        "model": {"layers": 16, "hidden": 2048, "heads": 16, "vocab": 32000, "seq_len": 2048, "attention": "eager"},
        "training": {"global_batch": 16, "micro_batch": 1},
        "parallelism": par,
    })
    cm = ComputeModel(peak_flops=1e15, hbm_bandwidth=3e12)
    return TransformerStep(sc, cm)


def test_1f1b_first_stage_holds_p_micro_batches():
    st = _step(pp=4, tp=2, sequence_parallel=True)
    mem = st.memory(80e9)
    per_layer = st.model.layer_activation_bytes(1, 2, True, "none")
    T = 2048
    emb = 4 * T * 2048 * 2 / 2  # embedding output for 4 in-flight micro-batches, SP shard
    assert mem["stage"] == 0
    assert mem["activations"] == pytest.approx(4 * 4 * per_layer + emb)  # p micro-batches x L/p layers = L layers


def test_gpipe_holds_all_micro_batches_and_zero_shards_states():
    st = _step(pp=2, schedule="gpipe")
    g = st.memory(80e9)
    per_layer = st.model.layer_activation_bytes(1)
    # every stage holds all 16 micro-batches; the last one also, per micro-batch, the final norm's input
    # and output (4 T h) and the loss's saved fp32 softmax (4 T V), so it is the fullest; the loss
    # backward of one micro-batch adds Megatron's 16-bit logits (2 T V)
    assert g["stage"] == 1
    assert g["activations"] == pytest.approx(16 * (8 * per_layer + 4 * 2048 * 2048 + 4 * 2048 * 32000))
    assert g["transient"] == pytest.approx(2048 * 32000 * 2)
    z0 = _step(dp=8, zero=0).memory(80e9)
    z1 = _step(dp=8, zero=1).memory(80e9)
    z3 = _step(dp=8, zero=3).memory(80e9)
    assert z1["optimizer"] == pytest.approx(z0["optimizer"] / 8)
    assert z1["grads"] == z0["grads"]
    assert z3["params"] == pytest.approx(z0["params"] / 8)
    assert z0["fits"] and z0["capacity_bytes"] == 80e9
