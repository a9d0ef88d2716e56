"""Several jobs on one fabric: placement rules, contention on shared links, none on disjoint ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from clustersim.config.base import load_model
from clustersim.config.jobs import place_jobs
from clustersim.config.scenario import Scenario
from clustersim.errors import ClusterSimError
from clustersim.simulate.run import run_scenario

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "scenarios" / "two-jobs-shared-fabric.yaml"


def dp_job(name, ranks, placement, size="64MiB"):
    """A data-parallel step as generic phases: compute, then a gradient all-reduce over the job."""
    return {"name": name, "placement": placement,
            "job": {"ranks": ranks, "iterations": 2, "phases": [
                {"name": "fwd+bwd", "compute": {"seconds": 1e-3}},
                {"name": "grads", "collective": {"op": "all_reduce", "size": size}}]}}


def two_jobs(a, b, nodes=4, topology="cannon-4xa100"):
    return Scenario.model_validate({"name": "two", "cluster": {"topology": topology, "nodes": nodes}, "jobs": [a, b]})


def test_shipped_scenario_shows_contention():
    d = run_scenario(SHIPPED).to_dict()
    assert [j["name"] for j in d["jobs"]] == ["dp-a", "dp-b"]
    for j in d["jobs"]:
        assert j["nodes"] == [0, 1] and j["gpus"] == 4
        assert j["slowdown"] > 1.05, f"{j=}"
        assert j["step_time_s"] == pytest.approx(j["slowdown"] * j["alone_step_time_s"]), f"{j=}"
        assert sum(j["breakdown"].values()) == pytest.approx(j["step_time_s"]), f"{j=}"
    assert d["step_time_s"] == max(j["step_time_s"] for j in d["jobs"])
    assert sum(d["breakdown"].values()) == pytest.approx(d["step_time_s"])


def test_shared_nic_slows_both_jobs_and_disjoint_nodes_do_not():
    # cannon-4xa100: one NIC per 4-GPU node. Spread, both jobs cross every node's NIC.
    shared = run_scenario(two_jobs(dp_job("a", 8, "spread"), dp_job("b", 8, "spread"))).to_dict()["jobs"]
    assert all(j["slowdown"] > 1.2 for j in shared)
    # packed: job a on nodes 0-1, job b on nodes 2-3; each job still crosses the (non-blocking) fabric
    apart = run_scenario(two_jobs(dp_job("a", 8, "packed"), dp_job("b", 8, "packed"))).to_dict()["jobs"]
    assert [j["nodes"] for j in apart] == [[0, 1], [2, 3]]
    for j in apart:
        assert j["slowdown"] == pytest.approx(1.0, abs=1e-9), f"{j=}"
    assert [j["nodes"] for j in shared] == [[0, 1, 2, 3]] * 2 and [j["ranks"][:3] for j in shared] == [[0, 1, 4], [2, 3, 6]]


def test_alone_equals_a_one_job_run_on_the_same_gpus():
    sc = two_jobs(dp_job("a", 8, "packed"), dp_job("b", 4, "packed"))
    d = run_scenario(sc).to_dict()["jobs"][0]
    one = Scenario.model_validate({"name": "one", "cluster": {"topology": "cannon-4xa100", "nodes": 4, "gpus": 8},
                                   "job": dp_job("a", 8, "packed")["job"]})
    assert d["alone_step_time_s"] == pytest.approx(run_scenario(one).step_time_s, rel=1e-12)


def test_placements():
    sc = two_jobs(dp_job("a", 4, [12, 13, 14, 15]), dp_job("b", 6, "spread"))
    hosts = [r // 4 for r in range(16)]
    assert place_jobs(sc.jobs, hosts) == [[12, 13, 14, 15], [0, 1, 4, 5, 8, 9]]
    sc = two_jobs(dp_job("a", 6, "packed"), dp_job("b", 3, "spread"))
    assert place_jobs(sc.jobs, hosts) == [[0, 1, 2, 3, 4, 5], [6, 8, 12]]


@pytest.mark.parametrize("a,b,field,needle", [
    (dp_job("a", 2, [0, 1]), dp_job("b", 2, [1, 2]), "jobs.1.placement", "placed in job 'a' too"),
    (dp_job("a", 2, [0, 0]), dp_job("b", 2, "packed"), "jobs.0.placement", "more than once"),
    (dp_job("a", 3, [0, 1]), dp_job("b", 2, "packed"), "jobs.0.placement", "the job has 3 ranks"),
    (dp_job("a", 2, "packed"), dp_job("a", 2, "packed"), "jobs.1.name", "used by jobs.0"),
])
def test_bad_placement_in_the_file(a, b, field, needle):
    with pytest.raises(ClusterSimError) as err:
        two_jobs(a, b)
    assert err.value.field == field and needle in err.value.reason


@pytest.mark.parametrize("a,b,field,needle", [
    (dp_job("a", 12, "packed"), dp_job("b", 8, "packed"), "jobs", "12 + 8 = 20 GPUs but the cluster has 16"),
    (dp_job("a", 2, [15, 16]), dp_job("b", 2, "packed"), "jobs.0.placement", "[16] do not exist"),
])
def test_jobs_that_do_not_fit(a, b, field, needle):
    with pytest.raises(ClusterSimError) as err:
        run_scenario(two_jobs(a, b))
    assert err.value.field == field and needle in err.value.reason


def test_job_rules_apply_inside_each_job():
    bad = {"name": "m", "model": {"preset": "gpt-125m"}, "parallelism": {"tp": 5}}
    with pytest.raises(ClusterSimError) as err:
        two_jobs(bad, dp_job("b", 2, "packed"))
    assert err.value.field.startswith("jobs.0") and "must divide model.heads" in err.value.reason
    bad = dp_job("a", 2, "packed")
    bad["job"]["phases"][1]["collective"]["algorithm"] = "no_such_algo"
    with pytest.raises(ClusterSimError) as err:
        run_scenario(two_jobs(bad, dp_job("b", 2, "packed")))
    assert err.value.field == "jobs.0.job.phases.1.collective.algorithm"


def test_cli_analytical_and_overlap_exit_2(tmp_path, cli):
    r = cli("run", str(SHIPPED), "--fidelity", "analytical")
    assert r.returncode == 2 and "need fidelity flow" in r.stderr and "Traceback" not in r.stderr
    text = SHIPPED.read_text().replace("placement: spread", "placement: [0, 1, 4, 5]")
    f = tmp_path / "overlap.yaml"
    f.write_text(text)
    r = cli("run", str(f))
    assert r.returncode == 2 and f"{f}: jobs.1.placement: GPU 0 is placed in job 'dp-a' too" in r.stderr


def test_shipped_file_loads():
    sc = load_model(Scenario, SHIPPED)
    assert len(sc.jobs) == 2 and sc.model is None and sc.job is None


def test_trace_groups_each_jobs_ranks():
    from clustersim.trace.chrome import trace_events

    res = run_scenario(two_jobs(dp_job("a", 4, "spread"), dp_job("b", 4, "spread")), keep_timeline=True)
    st = res.step
    ev = trace_events(st.graph, st.timeline, st.cluster, st.comm_time, rank_labels=st.rank_labels)
    names = {e["pid"]: e["args"]["name"] for e in ev if e.get("name") == "process_name"}
    order = sorted(names, key=lambda p: next(e["args"]["sort_index"] for e in ev
                                             if e.get("name") == "process_sort_index" and e["pid"] == p))
    assert [names[p].split(" rank ")[0] for p in order] == ["a"] * 4 + ["b"] * 4
    assert names[0] == "a rank 0 (h0.gpu0)" and names[4] == "a rank 1 (h1.gpu0)"
