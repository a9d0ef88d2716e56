"""Attention width decoupled from hidden (``model.head_dim``) and multi-head latent attention (``model.mla``):
parameter counts of the published models, the layer's GEMMs at both fidelities, the schema's rules."""

from __future__ import annotations

import pytest

from clustersim.config.base import validate
from clustersim.config.scenario import ModelSection, Scenario
from clustersim.errors import ClusterSimError
from clustersim.simulate.run import run_scenario
from clustersim.workload.model import MLADims, ModelDims
from clustersim.workload.moe import MoEDims

DSV3_MLA = MLADims(q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128)
LLAMA_STYLE = dict(mlp="swiglu", norm="rmsnorm", position_embedding="rope")


def test_deepseek_v3_main_model_has_671b_parameters_and_37b_active():
    # DeepSeek-V3 (arXiv 2412.19437, Table 1 / README_WEIGHTS): 671B total, 37B active, MTP module apart
    m = ModelDims(layers=61, hidden=7168, heads=128, kv_heads=128, ffn_hidden=18432, vocab=129280, seq_len=4096,
                  mla=DSV3_MLA, moe=MoEDims(experts=256, top_k=8, expert_ffn_hidden=2048, shared_experts=1,
                                            first_dense_layers=3), **LLAMA_STYLE)
    assert m.total_params == pytest.approx(671e9, rel=0.01)
    assert m.active_params == pytest.approx(37e9, rel=0.03)
    # the attention of one layer, weight by weight (q_a, q_b, kv_a, kv_b, o of the released checkpoint)
    assert m.attention_matmul_params == 7168 * 1536 + 1536 * 128 * 192 + 7168 * 576 + 512 * 128 * 256 + 128 * 128 * 7168


def test_qwen3_head_dim_decouples_the_query_width_from_hidden():
    # Qwen3-30B-A3B: 32 heads x 128 = 4096 query channels on hidden 2048, 4 KV heads; 30.5B parameters
    m = ModelDims(layers=48, hidden=2048, heads=32, kv_heads=4, ffn_hidden=6144, vocab=151936, seq_len=4096,
                  attn_head_dim=128, moe=MoEDims(experts=128, top_k=8, expert_ffn_hidden=768), **LLAMA_STYLE)
    assert (m.q_hidden, m.kv_hidden, m.attn_out_hidden) == (4096, 512, 4096)
    assert m.attention_matmul_params == 2048 * 4096 + 2 * 2048 * 512 + 4096 * 2048
    assert m.total_params == pytest.approx(30.5e9, rel=0.01)
    # MFU's attention term counts the 128-wide heads, not hidden/heads = 64
    no_dim = ModelDims(**{**m.__dict__, "attn_head_dim": None})
    assert m.model_flops_per_token() - no_dim.model_flops_per_token() == pytest.approx(
        6 * (m.attention_matmul_params - no_dim.attention_matmul_params) * 48 + 6 * 48 * 4096 * 32 * (256 - 128))


def test_the_default_head_dim_changes_nothing_and_is_left_out_of_a_dump():
    base = dict(layers=2, hidden=256, heads=4, vocab=100, seq_len=64)
    plain = validate(ModelSection, base)
    explicit = validate(ModelSection, {**base, "head_dim": 64})
    assert ModelDims.from_section(plain).total_params == ModelDims.from_section(explicit).total_params
    assert "head_dim" not in plain.model_dump() and "mla" not in plain.model_dump()
    assert explicit.model_dump()["head_dim"] == 64


def _scenario(tmp_path, model: str) -> str:
    path = tmp_path / "s.yaml"
    path.write_text(f"""name: width
cluster: {{topology: hgx-h200, gpus: 2}}
model: {{layers: 2, hidden: 1024, heads: 16, vocab: 32000, seq_len: 1024, mlp: swiglu, norm: rmsnorm,
         position_embedding: rope, ffn_hidden: 2816, {model}}}
training: {{global_batch: 4, micro_batch: 1}}
parallelism: {{tp: 2}}
""")
    return str(path)


@pytest.mark.parametrize("fidelity", ["analytical", "flow"])
def test_wider_heads_and_mla_cost_more_than_the_plain_layer_at_both_fidelities(tmp_path, fidelity):
    plain = run_scenario(_scenario(tmp_path, "kv_heads: 16"), fidelity=fidelity)
    wide = run_scenario(_scenario(tmp_path, "head_dim: 128"), fidelity=fidelity)  # Q/K/V/O twice as wide
    mla = run_scenario(_scenario(tmp_path, "mla: {q_lora_rank: 384, kv_lora_rank: 256, qk_nope_head_dim: 64, "
                                           "qk_rope_head_dim: 32, v_head_dim: 64}"), fidelity=fidelity)
    assert wide.step_time_s > plain.step_time_s
    assert mla.step_time_s > plain.step_time_s
    # the parameters held per GPU follow the weights: TP splits the up/output projections, not the down ones
    dims = ModelDims(layers=1, hidden=1024, heads=16, kv_heads=16, ffn_hidden=2816, vocab=1, seq_len=1,
                     mla=MLADims(384, 256, 64, 32, 64))
    per_gpu = (mla.memory["params"] - plain.memory["params"]) / 2  # bf16 weights, 2 layers
    expect = (dims.attention_split_params / 2 + dims.attention_replicated_params + dims.mla.norm_params
              - 4 * 1024 * 1024 / 2)
    assert per_gpu / 2 == pytest.approx(expect, rel=1e-6)


def test_analytical_and_flow_agree_on_an_mla_model_on_one_gpu(tmp_path):
    path = _scenario(tmp_path, "mla: {q_lora_rank: null, kv_lora_rank: 256, qk_nope_head_dim: 64, "
                               "qk_rope_head_dim: 32, v_head_dim: 64}")
    text = open(path).read().replace("gpus: 2", "gpus: 1").replace("tp: 2", "tp: 1")
    open(path, "w").write(text)
    a = run_scenario(path, fidelity="analytical").step_time_s
    f = run_scenario(path, fidelity="flow").step_time_s
    assert f == pytest.approx(a, rel=1e-6)


@pytest.mark.parametrize("model, reason", [
    ({"kv_heads": 2, "mla": {"kv_lora_rank": 64, "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "v_head_dim": 16}},
     "model.mla needs kv_heads = heads"),
    ({"head_dim": 64, "mla": {"kv_lora_rank": 64, "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "v_head_dim": 16}},
     "not both"),
    ({"hidden": 250}, "or give model.head_dim"),
])
def test_bad_attention_widths_are_refused_with_the_field(model, reason):
    data = {"name": "x", "cluster": {"topology": "hgx-h200"},
            "model": {"layers": 2, "hidden": 256, "heads": 4, "vocab": 100, "seq_len": 64, **model}}
    with pytest.raises(ClusterSimError, match=reason):
        validate(Scenario, data, file="s.yaml")
    assert validate(Scenario, {**data, "model": {**data["model"], "hidden": 250, "head_dim": 64, "kv_heads": 4,
                                                 "mla": None}}).model.head_dim == 64
