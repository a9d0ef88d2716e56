"""Scenario schema, cross-field rules, overrides and file loading."""

import copy

import pytest

from clustersim.config.base import apply_overrides, load_model, load_yaml, validate
from clustersim.config.profile import Profile
from clustersim.config.scenario import Scenario, check_world_size
from clustersim.errors import ClusterSimError

BASE = {
    "name": "gpt-1b-ddp",
    "cluster": {"topology": "hgx-h200", "gpus": 2},
    "model": {"layers": 16, "hidden": 2048, "heads": 16, "kv_heads": 16, "ffn_hidden": 8192, "vocab": 50304,
              "seq_len": 2048, "mlp": "gelu", "norm": "layernorm", "bias": False, "tied_embeddings": False,
              "position_embedding": "learned", "attention": "flash"},
    "training": {"global_batch": 8, "micro_batch": 4, "optimizer": "adamw", "recompute": "none",
                 "precision": {"params": "bf16", "grads": "fp32", "optimizer_states": "fp32", "master_weights": True}},
    "parallelism": {"dp": 2, "tp": 1, "pp": 1, "ep": 1, "cp": 1, "sequence_parallel": False, "vocab_parallel": True,
                    "zero": 0, "schedule": "1f1b", "virtual_stages": 1, "ddp_bucket_mb": 25},
}


def make(**changes):
    d = copy.deepcopy(BASE)
    return apply_overrides(d, [f"{k}={v}" for k, v in changes.items()])


def test_issue_example_validates():
    s = validate(Scenario, copy.deepcopy(BASE))
    assert s.world_size == 2 and s.micro_batches == 1
    check_world_size(s, 2)


def test_preset_and_explicit_override():
    s = validate(Scenario, {"name": "x", "cluster": {"topology": "dgx-h100"},
                            "model": {"preset": "llama3-8b", "layers": 4}, "parallelism": {"dp": 1}})
    assert s.model.layers == 4 and s.model.kv_heads == 8 and s.model.mlp == "swiglu"


@pytest.mark.parametrize("override,field_part,reason", [
    ({"parallelism.tp": 3}, "", "must divide model.heads"),
    ({"parallelism.pp": 32}, "", "exceeds model.layers"),
    ({"training.global_batch": 6}, "", "divisible by micro_batch*dp"),
    ({"parallelism.ep": 2}, "", "needs model.moe"),
    ({"parallelism.cp": 3}, "", "divisible by 2*cp"),
    ({"parallelism.cp_algorithm": "tree"}, "parallelism.cp_algorithm", "ring"),
    ({"parallelism.virtual_stages": 2}, "", "schedule: interleaved"),
    ({"parallelism.tp": 0}, "parallelism.tp", "greater than 0"),
    ({"model.mlp": "relu"}, "model.mlp", "gelu"),
    ({"parallelism.colour": "red"}, "parallelism.colour", "unknown key"),
    ({"model.preset": "gpt-9000"}, "", "unknown model preset"),
])
def test_rules_rejected(override, field_part, reason):
    with pytest.raises(ClusterSimError) as exc:
        validate(Scenario, make(**override), file="s.yaml")
    msg = str(exc.value)
    assert msg.startswith("s.yaml")
    assert field_part in msg
    assert reason in msg


def test_world_size_rule():
    s = validate(Scenario, make())
    with pytest.raises(ClusterSimError, match="must equal the GPU count"):
        check_world_size(s, 8, file="s.yaml")


def test_overrides_nested_and_errors():
    d = apply_overrides({"a": {"b": 1}, "l": [1, 2]}, ["a.b=2", "a.c.d=x", "l.1=5", "f=1.5"])
    assert d == {"a": {"b": 2, "c": {"d": "x"}}, "l": [1, 5], "f": 1.5}
    for bad in ["novalue", "=3", "a..b=1", "a.b.c=1"]:
        with pytest.raises(ClusterSimError):
            apply_overrides({"a": {"b": 1}}, [bad])


@pytest.mark.parametrize("content,reason", [
    (b"", "empty"),
    (b"name: [unclosed\n", "YAML syntax error"),
    (b"\x00\x01\x02binary", "binary"),
    (b"- a\n- b\n", "mapping"),
    (b"\xff\xfe\xfa", "UTF-8"),
])
def test_bad_files(tmp_path, content, reason):
    p = tmp_path / "bad.yaml"
    p.write_bytes(content)
    with pytest.raises(ClusterSimError) as exc:
        load_yaml(p)
    assert reason in str(exc.value) and "bad.yaml" in str(exc.value)


def test_missing_file(tmp_path):
    with pytest.raises(ClusterSimError, match="file not found"):
        load_model(Scenario, tmp_path / "nope.yaml")


def test_profile_schema_rejects_bad_segments():
    ok = {"name": "p", "collectives": [{"op": "all_reduce", "segments": [
        {"size_min_bytes": 0, "size_max_bytes": 1024, "alpha_us": 10, "algbw_GBps": 1},
        {"size_min_bytes": 1024, "alpha_us": 12, "algbw_GBps": 100}]}]}
    assert validate(Profile, ok).collectives[0].segments[1].size_max_bytes is None
    bad = copy.deepcopy(ok)
    bad["collectives"][0]["segments"][0]["algbw_GBps"] = 0
    with pytest.raises(ClusterSimError, match="collectives.0.segments.0.algbw_GBps"):
        validate(Profile, bad, file="p.yaml")
    bad = copy.deepcopy(ok)
    bad["links"] = {"nvlink": {"latency_us": 1, "bandwidth_GBps": -5}}
    with pytest.raises(ClusterSimError, match="links.nvlink.bandwidth_GBps"):
        validate(Profile, bad, file="p.yaml")
