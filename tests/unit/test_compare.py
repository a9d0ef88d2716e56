"""``clustersim compare``: the four log formats of tests/data/logs (hand-written in each tool's real line
format), the warm-up-free median, measured vs predicted, a folder as one table, and clean refusals."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from clustersim.errors import ClusterSimError
from clustersim.importers.compare import compare
from clustersim.importers.logs import read_log

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "tests" / "data" / "logs"
SCENARIO = ROOT / "scenarios" / "ref-single.yaml"  # 1 GPU, global batch 8 x 2,048 tokens


@pytest.mark.parametrize("log, fmt, median, memory", [
    ("megatron.log", "megatron", 1.012, 5834.56 * 2**20),  # iterations 3-5: 1012, 1020, 1004 ms
    ("torchtitan.log", "torchtitan", 1.0, 5.61 * 2**30),  # steps 3-5: 16,384 tokens at 16,384 / 16,110 / 16,520 tps
    ("mlperf.log", "mlperf", 1.0, None),  # blocks of 4 steps after the first: 4.0, 4.4, 4.0 s
    ("steps.jsonl", "jsonl", 1.02, 6e9),  # steps 3-5: 1.02, 1.05, 0.99 s
])
def test_each_format_gives_the_warm_up_free_median(log, fmt, median, memory):
    d = compare(SCENARIO, LOGS / log, fidelity="analytical")
    (row,) = d["rows"]
    assert row["format"] == fmt and read_log(LOGS / log).fmt == fmt  # found by its own marks
    assert row["measured_step_s"] == pytest.approx(median, rel=1e-9)
    assert row["predicted_step_s"] == d["predicted_step_s"] > 0
    assert row["error"] == pytest.approx((row["predicted_step_s"] - median) / median)
    assert row.get("measured_memory_bytes") == (pytest.approx(memory) if memory else None)
    # with no warm-up left out the slow first steps move the median up
    assert compare(SCENARIO, LOGS / log, warmup=0, fidelity="analytical")["rows"][0]["measured_step_s"] > median


def test_a_folder_of_logs_is_one_table_and_the_cli_prints_json(tmp_path, cli):
    for f in ("megatron.log", "steps.jsonl"):
        shutil.copy(LOGS / f, tmp_path / f)
    r = cli("compare", str(SCENARIO), str(tmp_path), "--fidelity", "analytical", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert [Path(row["log"]).name for row in d["rows"]] == ["megatron.log", "steps.jsonl"]
    assert d["evidence"]["fidelity"] == "analytical" and d["evidence"]["profile_file"].endswith(".yaml")
    r = cli("compare", str(SCENARIO), str(LOGS / "megatron.log"), "--fidelity", "analytical")
    assert r.returncode == 0 and "measured" in r.stdout and "1.012" in r.stdout, r.stdout


def test_bad_logs_are_refused_with_the_file_and_reason(tmp_path, cli):
    (tmp_path / "empty.log").write_text("nothing to see\n")
    r = cli("compare", str(SCENARIO), str(tmp_path / "empty.log"), "--fidelity", "analytical")
    assert r.returncode == 2 and "empty.log: no step times of a known format" in r.stderr
    (tmp_path / "bad.jsonl").write_text('{"step": 1, "step_time_s": -3}\n')
    r = cli("compare", str(SCENARIO), str(tmp_path / "bad.jsonl"), "--fidelity", "analytical")
    assert r.returncode == 2 and "bad.jsonl: line 1: step_time_s must be a positive number" in r.stderr
    r = cli("compare", str(SCENARIO), str(LOGS / "steps.jsonl"), "--warmup", "99", "--fidelity", "analytical")
    assert r.returncode == 2 and "every step time lies in the warm-up" in r.stderr
    with pytest.raises(ClusterSimError, match="no log files"):
        compare(SCENARIO, tmp_path / "nothing-here" if (tmp_path / "nothing-here").mkdir() is None else tmp_path)


def test_run_log_format_megatron_is_read_back_by_compare(tmp_path, cli):
    r = cli("run", str(SCENARIO), "--fidelity", "analytical", "--log-format", "megatron", "--set", "training.steps=4")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert sum("elapsed time per iteration (ms):" in ln for ln in lines) == 4 and "max allocated:" in lines[1]
    (tmp_path / "sim.log").write_text(r.stdout)
    d = compare(SCENARIO, tmp_path / "sim.log", fidelity="analytical")
    (row,) = d["rows"]
    assert row["format"] == "megatron" and row["steps_used"] == 2  # iterations 3 and 4 after the warm-up
    assert row["error"] == pytest.approx(0, abs=1e-3) and row["memory_error"] == pytest.approx(0, abs=1e-6)
    r = cli("run", str(SCENARIO), "--fidelity", "analytical", "--log-format", "csv")
    assert r.returncode == 2 and "--log-format" in r.stderr
