"""``clustersim plan`` over the whole space of the 2-GPU reference (moved from tests/unit/test_plan.py): the --json
document, --write-best and its re-run, the table with --explain; each plans 672 mixes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from clustersim.cli import app, main

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
TP2 = ROOT / "scenarios" / "ref-tp2.yaml"  # 24-layer 0.35B GPT on 2 H200, global batch 8
runner = CliRunner()


def test_cli_json_schema_and_write_best(tmp_path):
    out = tmp_path / "best.yaml"
    r = runner.invoke(app, ["plan", str(TP2), "--json", "--top", "3", "--flow-top", "1", "--workers", "1",
                            "--write-best", str(out), "--why", "tp=2,pp=1,zero=3"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert {"evaluated", "feasible", "wall_s", "plans"} <= set(d)
    assert d["evaluated"] == 128 and 0 < d["feasible"] <= d["evaluated"] and len(d["plans"]) == 3
    keys = {"dp", "tp", "pp", "virtual_stages", "ep", "cp", "sequence_parallel", "zero", "schedule", "micro_batch",
            "recompute", "step_time_s", "mfu", "tokens_per_s", "peak_bytes_per_gpu", "fits"}
    for p in d["plans"]:
        assert keys <= set(p)
        assert 0 < p["mfu"] < 1 and p["fits"] is True
    assert d["why"]["dropped"] is False
    doc = yaml.safe_load(out.read_text())
    assert doc["simulation"]["fidelity"] == "flow"
    best = d["plans"][0]
    assert doc["parallelism"]["tp"] == best["tp"] and doc["training"]["micro_batch"] == best["micro_batch"]
    r2 = runner.invoke(app, ["run", str(out), "--json"])
    assert r2.exit_code == 0, r2.output
    got = json.loads(r2.stdout)
    assert got["step_time_s"] == best["step_time_s"]
    assert got["memory"]["peak_bytes_per_gpu"] == best["peak_bytes_per_gpu"]


def test_cli_table_explain_and_bad_input(capsys):
    r = runner.invoke(app, ["plan", str(TP2), "--top", "3", "--flow-top", "0", "--workers", "1", "--explain"],
                      env={"COLUMNS": "80"})
    assert r.exit_code == 0, r.output
    assert "best plans" in r.output and "zero3-with-pipeline" in r.output
    assert max(len(line) for line in r.output.splitlines()) <= 80
    with pytest.raises(SystemExit) as e:
        main(["plan", str(TP2), "--schedule", "zigzag"])
    assert e.value.code == 2
    assert "zigzag" in capsys.readouterr().err
    assert runner.invoke(app, ["plan", "--help"]).exit_code == 0
