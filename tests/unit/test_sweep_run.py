"""Running studies: tables and their columns, determinism across executors, resume, plots, errors, the CLI."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from cli_inprocess import clustersim

from clustersim.errors import ClusterSimError
from clustersim.sweep.point import BREAKDOWN_KEYS, INPUT_COLUMNS, OUTPUT_COLUMNS
from clustersim.sweep.runner import run_study
from clustersim.sweep.store import ResultStore
from clustersim.sweep.tables import read_parquet_rows

PI_STUDY = """\
name: pi-small
scenario: montecarlo-pi
set: {simulation.fidelity: analytical}
axes:
  - grid: {cluster.gpus: [1, 2, 4, 8]}
plots:
  - {kind: scaling, measured: {1: 45.151563, 2: 22.624692, 4: 11.396042, 8: 5.748150}}
  - {kind: breakdown}
  - {kind: sensitivity, x: cluster.gpus, log_x: true}
"""

# the same study without its plots (three PNGs are most of its run time): for the tests of the tables and
# the journal; the plots, the process pool and the CLI's JSON over a whole study: tests/slow/test_sweep_run_slow.py
PI_TABLES = PI_STUDY.split("plots:")[0]

# a small transformer (2 layers of GPT-125M) on 1-2 H200 GPUs: memory and MFU columns are filled
GPT_SCENARIO = """\
name: tiny-gpt
cluster: {topology: hgx-h200}
model: {preset: gpt-125m, layers: 2, seq_len: 512}
training: {global_batch: 4, micro_batch: 1}
simulation: {fidelity: analytical}
"""
GPT_STUDY = """\
name: tiny
scenario: tiny.yaml
axes:
  - zip: {cluster.gpus: [1, 2, 2], parallelism.dp: [1, 2, 1]}
"""


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_tables_hold_every_input_and_output_column(tmp_path):
    study = _write(tmp_path, "pi.yaml", PI_TABLES)
    res = run_study(study, tmp_path / "out", executor="serial")
    assert res.evaluated == 4 and res.reused == 0 and not res.failed
    expected = ["point", "id", "cluster.gpus", "run_args", *INPUT_COLUMNS, *OUTPUT_COLUMNS]
    assert res.columns == expected
    with open(tmp_path / "out" / "results.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == expected and len(rows) == 4
    assert [r["n_gpus"] for r in rows] == ["1", "2", "4", "8"]
    assert rows[3]["nodes"] == "2"  # 8 GPUs = 2 Cannon nodes of 4
    assert rows[0]["run_args"] == "--set simulation.fidelity=analytical --set cluster.gpus=1"
    pq = read_parquet_rows(tmp_path / "out" / "results.parquet")
    assert list(pq[0]) == expected and len(pq) == 4
    assert pq[2]["n_gpus"] == 4 and isinstance(pq[2]["step_time_s"], float)
    # the job's work divides over the ranks: 1 GPU takes ~8x the time of 8
    assert pq[0]["step_time_s"] / pq[3]["step_time_s"] == pytest.approx(8.0, rel=1e-3)
    breakdown = sum(pq[3][f"breakdown_{k}_s"] for k in BREAKDOWN_KEYS)
    assert breakdown == pytest.approx(pq[3]["step_time_s"], rel=1e-6)
    timings = list(csv.DictReader(open(tmp_path / "out" / "timings.csv")))
    assert [t["id"] for t in timings] == [r["id"] for r in rows] and all(float(t["wall_s"]) >= 0 for t in timings)


def test_transformer_points_fill_memory_and_mfu(tmp_path):
    _write(tmp_path, "tiny.yaml", GPT_SCENARIO)
    study = _write(tmp_path, "study.yaml", GPT_STUDY)
    res = run_study(study, tmp_path / "out", executor="serial")
    ok = [r for r in res.rows if r["status"] == "ok"]
    assert [(r["n_gpus"], r["dp"]) for r in ok] == [(1, 1), (2, 2)]
    for r in ok:
        assert r["fits"] is True and r["peak_memory_bytes"] > 0 and 0 < r["mfu"] < 1 and r["tokens_per_s"] > 0, f"{r=}"
        assert r["model"] == "gpt-125m" and r["gpu"].startswith("H200") and r["seq_len"] == 512
        # the band and what the step rests on (clustersim.simulate.evidence): measured H200 kernel tables
        assert r["band_lo_s"] < r["step_time_s"] < r["band_hi_s"] and r["band_half_width"] >= 0.01, f"{r=}"
        assert r["evidence"].startswith("measured "), r["evidence"]
    # 2 GPUs with dp 1 breaks the world-size rule: an error row, the others still run
    bad = res.rows[2]
    assert bad["status"] == "error" and "must equal the GPU count" in bad["error"] and bad["step_time_s"] is None


class _Interrupt(Exception):
    pass


def test_interrupted_sweep_resumes_without_redoing_points(tmp_path):
    study = _write(tmp_path, "pi.yaml", PI_TABLES)
    out = tmp_path / "out"

    def stop_after_two(done, total):
        if done == 2:
            raise _Interrupt

    with pytest.raises(_Interrupt):
        run_study(study, out, executor="serial", progress=stop_after_two)
    assert len(ResultStore(out).load()) == 2
    assert not (out / "results.csv").exists()
    # an interruption in the middle of a write leaves half a line: it is cut, not glued to the next record
    with open(out / "points.jsonl", "a") as fh:
        fh.write('{"id": "torn", "row": {"step')
    res = run_study(study, out, executor="serial")
    assert res.reused == 2 and res.evaluated == 2
    lines = (out / "points.jsonl").read_text().splitlines()
    assert len(lines) == 4 and all(json.loads(l)["id"] != "torn" for l in lines)
    full = run_study(study, tmp_path / "full", executor="serial")
    assert (out / "results.csv").read_bytes() == (tmp_path / "full" / "results.csv").read_bytes()
    # once finished, a rerun evaluates nothing; --fresh evaluates everything
    assert run_study(study, out, executor="serial").evaluated == 0
    assert run_study(study, out, executor="serial", fresh=True).evaluated == 4
    assert full.reused == 0


def test_a_damaged_journal_line_is_reported(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "points.jsonl").write_text('not json\n{"id": "a", "row": {}, "wall_s": 0}\n')
    with pytest.raises(ClusterSimError, match="line 1 is not JSON"):
        ResultStore(out).load()


def _cli(*args, cwd=None):
    return clustersim(*args, cwd=cwd)


@pytest.mark.parametrize("args,needle", [
    (["--executor", "mpi"], "--executor must be one of"),
    (["--address", "tcp://127.0.0.1:1"], "--address needs --executor dask"),
    (["--max-jobs", "0"], "--max-jobs must be >= 1"),
    (["--set", "cluster.gpuz=2"], "every point is invalid"),
])
def test_cli_bad_input_exits_2(tmp_path, args, needle):
    study = _write(tmp_path, "pi.yaml", PI_STUDY)
    r = _cli("sweep", str(study), "-o", str(tmp_path / "out"), "--no-progress", *args)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert needle in r.stderr and "Traceback" not in r.stderr


def test_cli_help_has_examples():
    r = _cli("sweep", "--help")
    assert r.returncode == 0 and "Examples" in r.stdout and "--executor" in r.stdout
