"""Every shipped scenario runs; CLI output, traces and the generic-job checks (FASRC pi)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from clustersim.errors import ClusterSimError
from clustersim.simulate.run import run_scenario

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = sorted(p for p in (ROOT / "scenarios").glob("*.yaml") if not p.name.startswith("study-"))  # studies: test_shipped_studies
KEYS = {"step_time_s", "tokens_per_s", "samples_per_s", "mfu", "breakdown", "memory", "links"}


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_every_scenario_runs_analytical(path):
    import yaml

    if "jobs" in yaml.safe_load(path.read_text()):  # several jobs on one fabric: flow only, like link faults
        with pytest.raises(ClusterSimError, match="need fidelity flow"):
            run_scenario(path, fidelity="analytical")
        path_fidelity = "flow"
    else:
        path_fidelity = "analytical"
    res = run_scenario(path, fidelity=path_fidelity)
    d = res.to_dict()
    assert KEYS <= set(d)
    assert d["step_time_s"] > 0
    assert sum(d["breakdown"].values()) == pytest.approx(d["step_time_s"], rel=0.02)
    if d["memory"] is not None:
        assert {"params", "grads", "optimizer", "activations", "peak_bytes_per_gpu", "capacity_bytes", "fits"} <= set(d["memory"])
        assert 0 < d["mfu"] < 1


def _small(p: Path) -> bool:
    """Single-node scenarios (flow fidelity is cheap there)."""
    import yaml

    c = yaml.safe_load(p.read_text())["cluster"]
    return c.get("nodes") is None and "superpod" not in c["topology"]


SMALL = [p for p in SCENARIOS if _small(p)]


@pytest.mark.parametrize("path", SMALL, ids=lambda p: p.stem)
def test_small_scenarios_flow_agrees_uncontended(path):
    a = run_scenario(path, fidelity="analytical")
    f = run_scenario(path, fidelity="flow")
    # one job on one node: the same schedule, collectives meet rarely -> within a few percent
    assert f.step_time_s == pytest.approx(a.step_time_s, rel=0.05)
    if f.n_gpus > 1:
        assert f.links and all(0 <= row["busy_fraction"] <= 1 for row in f.links)


def test_flow_link_use_includes_closed_form_tp():
    """TP collectives that take the closed form at flow fidelity (no flows) still load their NVLinks in the link table."""
    a = run_scenario(ROOT / "scenarios" / "ref-tp2.yaml", fidelity="analytical")
    f = run_scenario(ROOT / "scenarios" / "ref-tp2.yaml", fidelity="flow")
    assert f.extra["tp_closed_form"] is True
    busy_a = {row["link"]: row["busy_fraction"] for row in a.links if row["kind"] == "nvlink"}
    busy_f = {row["link"]: row["busy_fraction"] for row in f.links if row["kind"] == "nvlink"}
    assert busy_a and set(busy_f) == set(busy_a)
    for link, frac in busy_a.items():
        assert frac > 0.01 and busy_f[link] == pytest.approx(frac, rel=0.05)


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "clustersim", *args], capture_output=True, text=True, cwd=ROOT)


def test_cli_json_and_trace(tmp_path):
    trace = tmp_path / "t.json"
    r = _cli("run", "scenarios/hybrid-tp2-pp2-dp2.yaml", "--json", "--trace", str(trace))
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)  # exactly one JSON document
    assert KEYS <= set(d) and d["n_gpus"] == 8
    doc = json.loads(trace.read_text())
    ev = doc["traceEvents"]
    names = {e["args"]["name"] for e in ev if e.get("name") == "thread_name"}
    assert {"compute", "tp", "dp", "pp_f", "pp_b"} <= names
    colls = [e for e in ev if e.get("ph") == "X" and "group" in e.get("args", {})]
    assert colls and all("bytes" in e["args"] for e in colls)
    assert {e["args"]["group"] for e in colls} >= {"dp", "pp", "tp"}
    assert all(e["dur"] >= 0 for e in ev if e.get("ph") == "X")
    # the table output
    r2 = _cli("run", "scenarios/gpt-1b-ddp.yaml", "--fidelity", "analytical")
    assert r2.returncode == 0 and "step time" in r2.stdout


def test_cli_bad_input_exit_2():
    r = _cli("run", "scenarios/gpt-1b-ddp.yaml", "--set", "parallelism.dp=3", "--json")
    assert r.returncode == 2 and "error" in r.stderr and r.stdout == ""
    r = _cli("run", "scenarios/gpt-1b-ddp.yaml", "--fidelity", "exact")
    assert r.returncode == 2


# FASRC Exercise 4 (published-runs.md §13.1): 1e13 samples, strong scaling, one 8-byte all-reduce.
PI = [("cluster.gpus=1", 45.151563), ("cluster.gpus=2", 22.624692), ("cluster.gpus=4", 11.396042),
      ("cluster.nodes=2", 5.748150)]


@pytest.mark.parametrize("override,measured", PI)
def test_montecarlo_pi_scaling(override, measured):
    res = run_scenario(ROOT / "scenarios" / "montecarlo-pi.yaml", fidelity="flow", overrides=[override])
    assert res.step_time_s == pytest.approx(measured, rel=0.03)
    assert res.breakdown["comm_dp"] < 1e-3  # an 8-byte all-reduce is negligible
