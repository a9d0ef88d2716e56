"""``clustersim scenario from-hf | from-megatron | from-torchtitan`` on the real published files of
tests/data/importers (sources in its README): the published parameter counts, the layouts, runnable output,
and clean refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from clustersim.config.base import load_model
from clustersim.config.scenario import Scenario
from clustersim.errors import ClusterSimError
from clustersim.importers.hf import scenario_from_hf
from clustersim.importers.megatron import scenario_from_megatron
from clustersim.importers.torchtitan import scenario_from_torchtitan
from clustersim.simulate.run import run_scenario
from clustersim.workload.model import ModelDims

DATA = Path(__file__).resolve().parents[1] / "data" / "importers"
HF = DATA / "hf"


@pytest.mark.parametrize("config, published, options", [
    ("Meta-Llama-3-8B", 8.03e9, {}),  # Meta model card: 8.03B
    ("Qwen3-30B-A3B", 30.5e9, {"ep": 8}),  # Qwen3 model card: 30.5B total, 3.3B activated
    ("DeepSeek-V3", 671e9, {"nodes": 32, "pp": 8, "ep": 32, "global_batch": 256}),  # 671B main model, MTP apart
    ("Mixtral-8x7B-v0.1", 46.7e9, {"ep": 8}),  # Mistral AI: 46.7B total
    ("gpt-oss-120b", 116.8e9, {"ep": 8}),  # OpenAI model card: 116.8B total
])
def test_from_hf_gives_the_published_parameter_count(config, published, options):
    imported = scenario_from_hf(HF / f"{config}.json", topology="hgx-h200", **options)
    assert imported.report["total_params"] == pytest.approx(published, rel=0.01), config
    sc = Scenario.model_validate(imported.scenario)  # what run and plan read
    assert ModelDims.from_section(sc.model).total_params == imported.report["total_params"]
    assert imported.warnings == []  # every key of the released configs is read or known to be inert


def test_deepseek_v3_counts_its_mtp_module_apart_and_names_what_is_not_modelled():
    imported = scenario_from_hf(HF / "DeepSeek-V3.json", topology="hgx-h200", nodes=32, pp=8, ep=32, global_batch=256)
    m = imported.scenario["model"]
    assert m["mla"] == {"q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
                        "v_head_dim": 128}
    assert m["moe"]["first_dense_layers"] == 3 and m["seq_len"] == 4096  # the pre-training length, not 163,840
    # README_WEIGHTS of DeepSeek-V3: 11.5B MTP parameters beside the shared embedding and head
    assert imported.report["mtp_params"] == pytest.approx(11.5e9, rel=0.02)
    assert imported.report["active_params"] == pytest.approx(37e9, rel=0.03)
    assert any("group-limited routing" in n for n in imported.notes)


def test_qwen3_moe_keeps_its_decoupled_head_width():
    m = scenario_from_hf(HF / "Qwen3-30B-A3B.json", topology="hgx-h200", ep=8).scenario["model"]
    assert (m["hidden"], m["heads"], m["head_dim"], m["kv_heads"]) == (2048, 32, 128, 4)


def test_from_hf_output_runs_and_the_inline_hf_config_gives_the_same_model(tmp_path, cli):
    out = tmp_path / "llama.yaml"
    r = cli("scenario", "from-hf", str(HF / "Meta-Llama-3-8B.json"), "--seq-len", "2048", "--global-batch", "8",
            "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "8.03B parameters" in r.stderr
    written = yaml.safe_load(out.read_text())
    inline = tmp_path / "inline.yaml"
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "config.json").write_text((HF / "Meta-Llama-3-8B.json").read_text())
    inline.write_text(yaml.safe_dump({**written, "model": {"hf_config": "cfg/config.json", "seq_len": 2048}}))
    a, b = load_model(Scenario, out), load_model(Scenario, inline)  # inline path: relative to the scenario's folder
    assert ModelDims.from_section(a.model) == ModelDims.from_section(b.model)
    assert run_scenario(str(inline), fidelity="analytical").step_time_s == \
        run_scenario(str(out), fidelity="analytical").step_time_s


def test_from_hf_names_unknown_keys_and_refuses_what_it_cannot_express(tmp_path, cli):
    cfg = json.loads((HF / "Meta-Llama-3-8B.json").read_text())
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps({**cfg, "frobnicate_layers": 3}))
    r = cli("scenario", "from-hf", str(odd))
    assert r.returncode == 0 and "unknown key 'frobnicate_layers'" in r.stderr
    for change, field in ((({"model_type": "bert"}), "model_type"), ({"hidden_act": "relu"}, "hidden_act"),
                          ({"num_hidden_layers": "many"}, "num_hidden_layers")):
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps({**cfg, **change}))
        r = cli("scenario", "from-hf", str(bad))
        assert r.returncode == 2 and f"bad.json: {field}:" in r.stderr, r.stderr
    (tmp_path / "broken.json").write_text("{not json")
    r = cli("scenario", "from-hf", str(tmp_path / "broken.json"))
    assert r.returncode == 2 and "not valid JSON" in r.stderr and "Traceback" not in r.stderr
    r = cli("scenario", "from-hf", str(HF / "DeepSeek-V3.json"), "--ep", "64")  # 8 GPUs cannot hold EP 64
    assert r.returncode == 2 and "parallelism.ep" in r.stderr


def test_from_megatron_reads_gpt3_175b_published_arguments():
    # Megatron-LM examples/gpt3/train_gpt3_175b_distributed.sh: TP 8 x PP 16, global batch 1536, fp16
    imported = scenario_from_megatron(str(DATA / "megatron" / "train_gpt3_175b_distributed.sh"), topology="hgx-h200",
                                      nodes=128)
    assert imported.report["layout"] == {"dp": 8, "tp": 8, "pp": 16, "cp": 1, "ep": 1}
    assert imported.report["total_params"] == pytest.approx(175e9, rel=0.01)
    m, t = imported.scenario["model"], imported.scenario["training"]
    assert (m["layers"], m["hidden"], m["heads"], m["seq_len"], m["vocab"]) == (96, 12288, 96, 2048, 51200)
    assert (t["global_batch"], t["micro_batch"], t["precision"]["params"]) == (1536, 1, "fp16")
    assert imported.warnings == []  # every argument of the script is read or known to be inert


def test_from_megatron_maps_the_parallel_and_memory_arguments(cli):
    args = ("--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --group-query-attention --num-query-groups 4 "
            "--ffn-hidden-size 2816 --seq-length 1024 --micro-batch-size 1 --global-batch-size 8 --swiglu "
            "--normalization RMSNorm --disable-bias-linear --untie-embeddings-and-output-weights "
            "--position-embedding-type rope --tensor-model-parallel-size 2 --sequence-parallel "
            "--use-distributed-optimizer --overlap-grad-reduce --recompute-granularity selective --bf16 "
            "--vocab-size 32000 --no-such-flag 3")
    imported = scenario_from_megatron(args, topology="hgx-h200", gpus=4)
    par, m = imported.scenario["parallelism"], imported.scenario["model"]
    assert par == {"tp": 2, "sequence_parallel": True, "zero": 1, "dp_overlap": True, "dp": 2}
    assert (m["kv_heads"], m["mlp"], m["norm"], m["bias"], m["tied_embeddings"], m["vocab"]) == \
        (4, "swiglu", "rmsnorm", False, False, 32000)
    assert imported.scenario["training"]["recompute"] == "selective"
    assert imported.warnings == ["argument --no-such-flag not read (check that it does not change the step)"]
    r = cli("scenario", "from-megatron", "--hidden-size 1024 --num-attention-heads 16 --seq-length 64")
    assert r.returncode == 2 and "--num-layers: required argument is missing" in r.stderr
    r = cli("scenario", "from-megatron", "--num-layers $L --hidden-size 1024 --num-attention-heads 16 --seq-length 64")
    assert r.returncode == 2 and "--num-layers: needs an integer" in r.stderr


@pytest.mark.parametrize("job, gpus, layout, params", [
    ("llama3_8b", None, {"dp": 8, "tp": 1, "pp": 1, "cp": 1}, 8.03e9),
    ("llama3_70b", 16, {"dp": 2, "tp": 8, "pp": 1, "cp": 1}, 70.6e9),
])
def test_from_torchtitan_shipped_llama3_jobs_run(tmp_path, cli, job, gpus, layout, params):
    imported = scenario_from_torchtitan(DATA / "torchtitan" / f"{job}.toml", topology="hgx-h200",
                                        nodes=2 if gpus else None)
    assert imported.report["layout"] == layout
    assert imported.report["total_params"] == pytest.approx(params, rel=0.01)
    sc = imported.scenario
    assert sc["parallelism"]["zero"] == 3 and sc["model"]["seq_len"] == 8192  # FSDP2 over the shard degree
    out = tmp_path / "job.yaml"
    out.write_text(imported.yaml())
    # one micro-batch per rank keeps the test fast; the override syntax is torchtitan's own
    r = cli("scenario", "from-torchtitan", str(DATA / "torchtitan" / f"{job}.toml"), "--training.local_batch_size=1",
            *(["--nodes", "2"] if gpus else []), "-o", str(out))
    assert r.returncode == 0, r.stderr
    res = run_scenario(str(out), fidelity="analytical")
    assert res.step_time_s > 0 and res.memory["fits"]


def test_from_torchtitan_refuses_unknown_flavors_and_bad_toml(tmp_path, cli):
    text = (DATA / "torchtitan" / "llama3_8b.toml").read_text()
    (tmp_path / "x.toml").write_text(text.replace('flavor = "8B"', 'flavor = "9B"'))
    r = cli("scenario", "from-torchtitan", str(tmp_path / "x.toml"))
    assert r.returncode == 2 and "model.flavor" in r.stderr
    (tmp_path / "y.toml").write_text("[training\n")
    r = cli("scenario", "from-torchtitan", str(tmp_path / "y.toml"))
    assert r.returncode == 2 and "not valid TOML" in r.stderr
    with pytest.raises(ClusterSimError, match="expected --section.key=value"):
        scenario_from_torchtitan(DATA / "torchtitan" / "llama3_8b.toml", topology="hgx-h200", overrides=["seq=1"])
