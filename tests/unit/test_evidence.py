"""The evidence of a run and its band (clustersim/simulate/evidence.py), and the planner's use of it
(clustersim/plan/distinguish.py), on small hand-made inputs."""

from __future__ import annotations

import math
from pathlib import Path

from clustersim.config.profile import Profile
from clustersim.plan.distinguish import mark_distinguishable
from clustersim.plan.result import Plan
from clustersim.plan.space import Mix
from clustersim.simulate.evidence import MIN_HALF_WIDTH, evidence_of

PROV = [{"fields": ["compute"], "kind": "measured", "files": ["k.jsonl"], "machine": "one H200", "date": "2026-11-24",
         "held_out_error": 0.05},
        {"fields": ["host"], "kind": "measured", "files": ["h.jsonl"], "machine": "2 H200", "date": "2026-11-26",
         "held_out_error": 0.2},
        {"fields": ["links"], "kind": "published", "source": "NCCL tuning.cc", "held_out_error": 1.3}]
PROFILE = Profile(name="x", provenance=PROV)
ROOT = Path(__file__).resolve().parents[2]
NVLINK = [{"link": "a", "kind": "nvlink", "busy_s": 1.0}]


def test_shares_and_band_combine_independent_entries():
    ev = evidence_of(PROFILE, {"compute": 0.6, "host": 0.3, "comm_dp": 0.1}, 1.0, NVLINK, 1, "H200-SXM")
    assert ev["step"] == {"measured": 0.9, "published": 0.1}
    assert ev["parts"]["comm_dp"] == {"published": 1.0} and ev["links"]["nvlink"]["profile"] == "published"
    # root of the sum of squares of share x error: not the sum (a product of worst cases would be wider still)
    rss = math.sqrt((0.6 * 0.05) ** 2 + (0.3 * 0.2) ** 2 + (0.1 * 1.3) ** 2)
    assert math.isclose(ev["band"]["half_width"], rss, rel_tol=1e-5)
    assert rss < 0.6 * 0.05 + 0.3 * 0.2 + 0.1 * 1.3
    lo, hi = ev["band"]["step_time_s"]
    assert math.isclose(lo * hi, 1.0) and hi > 1.0   # symmetric in log
    assert ev["sensitivity"][0]["entry"] == "links.nvlink"   # 0.13 of the step moves with it, the most


def test_bubble_rests_on_what_it_waits_for_and_the_floor_holds():
    ev = evidence_of(PROFILE, {"host": 0.5, "bubble": 0.5}, 1.0, [], 1, "H200-SXM")
    assert ev["parts"] == {"host": {"measured": 1.0}}
    tiny = Profile(name="y", provenance=[{**PROV[0], "held_out_error": 0.001}])
    assert evidence_of(tiny, {"compute": 1.0}, 1.0, [], 1, "H200-SXM")["band"]["half_width"] == MIN_HALF_WIDTH


def test_beyond_one_node_collectives_rest_on_the_network_class():
    ev = evidence_of(PROFILE, {"comm_dp": 1.0}, 1.0, [], 4, "H200-SXM")
    assert ev["collectives"]["comm_dp"]["link_classes"] == {"network": 1.0}


def _plan(t: float, half: float, compute_share: float) -> Plan:
    mix = Mix(dp=1, tp=1, pp=1, virtual_stages=1, ep=1, cp=1, sequence_parallel=False, zero=0, schedule="1f1b",
              micro_batch=1, recompute="none")
    sens = [{"entry": "compute.gemm_table", "class": "measured", "share": compute_share, "error": 0.05,
             "moves": compute_share * 0.05}]
    return Plan(mix=mix, step_time_s=t, mfu=None, tokens_per_s=None, peak_bytes_per_gpu=0.0, fits=True,
                fidelity="analytical", analytical_step_time_s=t, bound_s=0.0,
                evidence={"half_width": half, "sensitivity": sens})


def test_plans_inside_the_best_band_are_not_distinguishable():
    best, close, far = _plan(1.0, 0.05, 1.0), _plan(1.03, 0.05, 0.2), _plan(1.5, 0.05, 1.0)
    mark_distinguishable([best, close, far])
    assert not close.distinguishable and far.distinguishable
    # 0.79 s more of the best's step on the kernel tables, x their 5% error (0.04 s), covers the 0.03 s gap
    assert close.could_swap == "compute.gemm_table" and far.could_swap is None
    assert close.to_dict()["distinguishable_from_best"] is False and len(close.to_dict()["band_s"]) == 2


def test_run_prints_its_evidence_and_measures_the_host_share(cli):
    """`clustersim run` prints one evidence line; its --json takes the host's share from the host elasticity (a
    host-bound 2-GPU DDP step: most of it moves with the host, more than the breakdown's host part)."""
    import json

    scen = str(ROOT / "scenarios" / "ref-ddp2.yaml")
    out = cli("run", scen, "--fidelity", "analytical")
    assert out.returncode == 0 and "evidence: " in out.stdout and "band +-" in out.stdout, out.stdout
    d = json.loads(cli("run", scen, "--fidelity", "analytical", "--json").stdout)
    ev = d["evidence"]
    assert ev["host_elasticity"] > d["breakdown_fraction"]["host"] + 0.2, (ev["host_elasticity"], d["breakdown_fraction"])
    assert ev["sensitivity"][0]["entry"] == "host.per_call_overhead_us"


def test_a_part_whose_groups_span_hosts_rests_on_the_network():
    links = [{"link": "a", "kind": "nvlink", "busy_s": 5.0}, {"link": "b", "kind": "network", "busy_s": 1.0}]
    ev = evidence_of(PROFILE, {"comm_dp": 0.5, "comm_tp": 0.5}, 1.0, links, 2, "H200-SXM",
                     crossing={"comm_dp": True, "comm_tp": False})
    assert ev["collectives"]["comm_dp"]["link_classes"] == {"network": 1.0}
    assert ev["collectives"]["comm_tp"]["link_classes"] == {"nvlink": 1.0}
    assert ev["crossing_hosts"] == {"comm_dp": True, "comm_tp": False}
