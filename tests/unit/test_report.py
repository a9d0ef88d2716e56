"""`calibrate report` and the uncertainty band (issue 5, "Fit and report")."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from clustersim.calibration import fit as F
from clustersim.calibration.report import bar_check, evaluate
from clustersim.collectives.uncertainty import find_entry, predict, predict_many, segment_for
from clustersim.cli import calibrate_fit
from clustersim.config.profile import CollectiveEntry, Profile
from clustersim.errors import ClusterSimError

DATA = Path(__file__).resolve().parents[1] / "data" / "h200x2"
NT_LOG = DATA / "nt_all_reduce.txt"


def nt_rows(path: Path) -> list[dict]:
    """Contract 3 rows of an nccl-tests log (the project's importer; a tiny local reader without it)."""
    try:
        from clustersim.calibration.nccl_tests import parse_nccl_tests_log
    except ImportError:  # pragma: no cover
        rows = [{"kind": "meta", "gpu": "NVIDIA H200", "nvls": False}]
        for line in path.read_text().splitlines():
            p = line.split()
            if p and not p[0].startswith("#"):
                for col, inplace in ((5, False), (9, True)):
                    rows.append({"kind": "collective", "op": "all_reduce", "ranks": 2, "nodes": 1, "scope": "intra",
                                 "mode": "nccl", "size_bytes": int(p[0]), "time_us": float(p[col]), "inplace": inplace})
        return rows
    return parse_nccl_tests_log(str(path), warn=None)


@pytest.fixture(scope="module")
def real():
    meas = F.Measurements(rows=[r for r in (F.normalise_row(x) for x in nt_rows(NT_LOG)) if r is not None])
    prof = F.fit_profile(meas, name="h200x2-odd", holdout="odd").profile
    return meas, prof


ENTRY = CollectiveEntry(op="all_reduce", ranks=2, scope="intra", segments=[
    {"size_min_bytes": 0, "size_max_bytes": 1e6, "alpha_us": 10, "algbw_GBps": 50,
     "alpha_ci_us": [9, 11], "algbw_ci_GBps": [45, 55]},
    {"size_min_bytes": 1e6, "alpha_us": 20, "algbw_GBps": 300, "alpha_ci_us": [15, 25], "algbw_ci_GBps": [290, 310]},
])


# --------------------------------------------------------------------------- uncertainty


def test_predict_uses_the_right_regime_and_brackets_the_time():
    for S, seg in ((0, 0), (999_999, 0), (1_000_000, 1), (4e9, 1)):
        assert segment_for(ENTRY, S) is ENTRY.segments[seg]
        t, lo, hi = predict(ENTRY, S)
        s = ENTRY.segments[seg]
        assert math.isclose(t, s.alpha_us * 1e-6 + S / (s.algbw_GBps * 1e9)), f"{S=}, {seg=}"
        assert lo <= t <= hi, f"{S=}, {seg=}"
    # the band: alpha's interval alone at S = 0, bandwidth's dominating at large S
    t, lo, hi = predict(ENTRY, 0)
    assert math.isclose(lo, 9e-6) and math.isclose(hi, 11e-6)
    t, lo, hi = predict(ENTRY, 4e9)
    assert math.isclose(hi - t, math.hypot(5e-6, 4e9 / 290e9 - 4e9 / 300e9), rel_tol=1e-9)
    assert math.isclose(t - lo, math.hypot(5e-6, 4e9 / 300e9 - 4e9 / 310e9), rel_tol=1e-9)
    arr = predict_many(ENTRY, [0, 1e6, 4e9])
    assert arr.shape == (3, 3) and np.all(arr[:, 1] <= arr[:, 0]) and np.all(arr[:, 0] <= arr[:, 2])
    with pytest.raises(ClusterSimError):
        predict(ENTRY, -1)


def test_predict_without_intervals_is_a_point():
    e = CollectiveEntry(op="broadcast", segments=[{"alpha_us": 5, "algbw_GBps": 100}])
    t, lo, hi = predict(e, 1e6)
    assert t == lo == hi == pytest.approx(15e-6)


def test_find_entry_most_specific():
    p = Profile(name="x", collectives=[
        {"op": "all_reduce", "segments": [{"alpha_us": 1, "algbw_GBps": 1}]},
        {"op": "all_reduce", "ranks": 2, "segments": [{"alpha_us": 2, "algbw_GBps": 1}]},
        {"op": "all_reduce", "ranks": 2, "scope": "intra", "segments": [{"alpha_us": 3, "algbw_GBps": 1}]},
        {"op": "all_reduce", "ranks": 2, "scope": "intra", "mode": "framework", "segments": [{"alpha_us": 4, "algbw_GBps": 1}]},
    ])
    assert find_entry(p, "all_reduce", ranks=2, scope="intra").segments[0].alpha_us == 3
    assert find_entry(p, "all_reduce", ranks=2, scope="inter").segments[0].alpha_us == 2
    assert find_entry(p, "all_reduce", ranks=8).segments[0].alpha_us == 1
    assert find_entry(p, "all_reduce", ranks=2, scope="intra", mode="framework").segments[0].alpha_us == 4
    assert find_entry(p, "all_gather", ranks=2) is None


# --------------------------------------------------------------------------- evaluate


def test_report_on_real_log_compares_only_held_out_sizes(real):
    meas, prof = real
    rep = evaluate(meas.rows, prof, holdout="odd")
    sizes = sorted({r["size_bytes"] for r in meas.rows if r["kind"] == "collective"})
    assert [r["size_bytes"] for r in rep.rows] == sizes[1::2]
    for r in rep.rows:
        measured = [x["time_us"] for x in meas.rows if x.get("size_bytes") == r["size_bytes"]]
        assert math.isclose(r["measured_us"], float(np.median(measured)), rel_tol=1e-6), f"{r=}"
        assert math.isclose(r["error_pct"], (r["predicted_us"] - r["measured_us"]) / r["measured_us"] * 100, abs_tol=0.01), \
            f"{r=}"
        assert r["lo_us"] <= r["predicted_us"] <= r["hi_us"], f"{r=}"
    s = rep.summary[0]
    large = [abs(r["error_pct"]) for r in rep.rows if r["size_bytes"] >= 2**20]
    assert math.isclose(s["mean_abs_err_large_pct"], np.mean(large), abs_tol=1e-3)
    assert math.isclose(s["max_abs_err_large_pct"], max(large), abs_tol=1e-3)
    assert bar_check(rep) == []
    # in-sample: every size
    assert len(evaluate(meas.rows, prof, holdout="none").rows) == len(sizes)


def test_bar_check_flags_a_bad_profile(real):
    meas, prof = real
    e = prof.collectives[0]
    bad = prof.model_copy(update={"collectives": [e.model_copy(update={"segments": [
        s.model_copy(update={"algbw_GBps": s.algbw_GBps * 0.8}) for s in e.segments]})]})
    fails = bar_check(evaluate(meas.rows, bad, holdout="odd"))
    assert any(">= 1 MiB" in f for f in fails)


def test_report_missing_entry_and_no_collectives(real):
    meas, prof = real
    rows = meas.rows + [{"kind": "collective", "op": "broadcast", "ranks": 2, "scope": "intra", "mode": "nccl",
                         "size_bytes": s, "time_us": 20.0} for s in (1024, 2048, 4096)]
    rep = evaluate(rows, prof, holdout="odd")
    assert rep.missing == ["broadcast 2r intra"]
    with pytest.raises(ClusterSimError):
        evaluate([{"kind": "gemm", "m": 1, "n": 1, "k": 1, "tflops": 1}], prof)
    with pytest.raises(ClusterSimError, match="no entry"):
        evaluate(rows[-3:], prof)


# --------------------------------------------------------------------------- CLI


def make_app() -> typer.Typer:
    root = typer.Typer()
    sub = typer.Typer()
    calibrate_fit.register(sub)
    root.add_typer(sub, name="calibrate")
    return root


def run_cli(*args: str):
    return CliRunner().invoke(make_app(), list(args))


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    # one fit for the module's tests (--topology: the link model is fitted too, a second)
    tmp_path = tmp_path_factory.mktemp("fitted")
    src = tmp_path / "ar.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in nt_rows(NT_LOG)))
    prof = tmp_path / "p.yaml"
    r = run_cli("calibrate", "fit", str(src), "-o", str(prof), "--holdout", "odd", "--topology", "hgx-h200")
    assert r.exit_code == 0, r.output
    return src, prof


def test_cli_report_json(fitted):
    src, prof = fitted
    r = run_cli("calibrate", "report", str(src), "--profile", str(prof), "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["summary"][0]["mean_abs_err_large_pct"] <= 5.0
    assert {p["size_bytes"] for p in doc["points"]} == set(sorted({x["size_bytes"] for x in nt_rows(NT_LOG) if x["kind"] == "collective"})[1::2])


def test_cli_report_warns_on_holdout_mismatch(fitted):
    src, prof = fitted
    r = run_cli("calibrate", "report", str(src), "--profile", str(prof), "--holdout", "even")
    assert r.exit_code == 0 and "held out" in r.stderr


@pytest.mark.parametrize("case", ["no_profile", "bad_profile", "empty", "holdout", "no_collectives"])
def test_cli_report_user_errors_exit_2(fitted, tmp_path, case):
    src, prof = fitted
    args = ["calibrate", "report", str(src), "--profile", str(prof)]
    if case == "no_profile":
        args[4] = str(tmp_path / "none.yaml")
    elif case == "bad_profile":
        (tmp_path / "bad.yaml").write_text("name: x\ncollectives: [{op: all_reduce, segments: []}]\n")
        args[4] = str(tmp_path / "bad.yaml")
    elif case == "empty":
        (tmp_path / "e.jsonl").write_text("\n")
        args[2] = str(tmp_path / "e.jsonl")
    elif case == "holdout":
        args += ["--holdout", "2"]
    elif case == "no_collectives":
        (tmp_path / "g.jsonl").write_text('{"kind": "hbm", "bandwidth_GBps": 4000}\n')
        args[2] = str(tmp_path / "g.jsonl")
    r = run_cli(*args)
    assert r.exit_code == 2, r.output
    assert "error:" in r.stderr
