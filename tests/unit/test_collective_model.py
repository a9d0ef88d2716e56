"""CollectiveModel: profile lookup, data paths, accuracy bar against published and measured numbers."""

from pathlib import Path

import numpy as np
import pytest
from checks import assert_close

from clustersim.calibration.nccl_tests import parse_nccl_tests_log
from clustersim.collectives import CollectiveModel, resolve_profile
from clustersim.config.profile import CollectiveEntry, Profile, Segment
from clustersim.errors import ClusterSimError

DATA = Path(__file__).resolve().parents[1] / "data"
MEAS = Path(__file__).resolve().parents[2] / "profiles" / "measurements"
GiB, MiB = 2**30, 2**20


@pytest.fixture(scope="module")
def h100(shared_cluster, shared_profile):
    c = shared_cluster("dgx-h100")
    return CollectiveModel(c, shared_profile(c.default_profile))


@pytest.fixture(scope="module")
def h200x2_rows():
    rows = [r for r in parse_nccl_tests_log(DATA / "h200x2" / "nt_all_reduce.txt") if r.get("kind") == "collective"]
    return [r for r in rows if not r["inplace"]]


def test_result_fields_and_dict(h100):
    r = h100.estimate("all_reduce", 8, GiB)
    d = r.to_dict()
    for k in ("op", "gpus", "size_bytes", "algorithm", "protocol", "time_s", "algbw_GBps", "busbw_GBps"):
        assert k in d
    assert r.time_s == pytest.approx(r.latency_s + r.bandwidth_time_s)
    assert r.busbw_GBps == pytest.approx(r.algbw_GBps * 1.75)


# -- accuracy bar (a): 8x H100 NVSwitch ring all_reduce >= 2 GiB, NVLS off: busbw 365 GB/s +- 10% (nccl#1455)
@pytest.mark.parametrize("size", [2 * GiB, 4 * GiB, 8 * GiB])
def test_accuracy_dgx_h100_ring_large(h100, size):
    r = h100.estimate("all_reduce", 8, size, algorithm="ring")
    assert r.busbw_GBps == pytest.approx(365, rel=0.10)


def test_dgx_h100_ramp_is_monotone_and_starts_low(h100):
    bws = [h100.estimate("all_reduce", 8, 2**k, algorithm="ring").busbw_GBps for k in range(10, 34)]
    assert all(b2 >= b1 * 0.999 for b1, b2 in zip(bws, bws[1:]))
    assert bws[0] < 1 and bws[10] < 100  # 1 KiB, 1 MiB: latency bound


def test_nvls_on_reaches_published_480(h100):
    r = h100.estimate("all_reduce", 8, 8 * GiB)  # profile default nvls: true
    assert r.algorithm == "nvls"
    assert r.busbw_GBps == pytest.approx(480, rel=0.05)  # tests#212, Azure ND H100 v5 478.87
    off = CollectiveModel(h100.cluster, h100.profile, nvls=False).estimate("all_reduce", 8, 8 * GiB)
    assert off.algorithm == "ring"


# -- accuracy bar (b): 2x H200 against the real nccl-tests log
def _errors(model, rows):
    sel = [r for r in rows if MiB <= r["size_bytes"] <= 4 * GiB]
    return np.array([abs(model.estimate("all_reduce", 2, r["size_bytes"]).time_s * 1e6 - r["time_us"]) / r["time_us"]
                     for r in sel])


def test_accuracy_hgx_h200_two_gpus_shipped_profile(h200x2_rows, shared_cluster, shared_profile):
    c = shared_cluster("hgx-h200", gpus=2)
    m = CollectiveModel(c, shared_profile(c.default_profile))
    err = _errors(m, h200x2_rows)
    assert err.mean() <= 0.10, f"2x H200 all_reduce 1 MiB-4 GiB: mean error {err.mean():.1%} > 10% (max {err.max():.1%})"
    # Latency floor. The profile's entries are NCCL-level kernel time from CUDA-graph replay (no host launch,
    # 9.2 us at 1 KiB) and the model adds the measured GPU-side kernel gap (compute.kernel_launch_us, 1.75 us):
    # ~11 us. nccl-tests' 13 us floor is bound by the host issuing NCCL calls one by one (it runs 4.1 us above
    # the graph time up to 128 KiB and meets it from 2 MiB on), which the profile does not model: documented
    # in docs/collectives.md, held to 20% here.
    floor = m.estimate("all_reduce", 2, 8).time_s * 1e6
    nt_floor = float(np.median([r["time_us"] for r in h200x2_rows if r["size_bytes"] <= 4096]))
    assert_close(floor, nt_floor, rel=0.20, what="all_reduce 8 B floor", unit="us", names=("model", "nccl-tests"))
    assert floor < nt_floor  # never above what the host-bound nccl-tests loop shows
    for size, want, rel in ((MiB, 60, 0.15), (GiB, 330, 0.05), (4 * GiB, 347, 0.05)):
        assert_close(m.estimate("all_reduce", 2, size).busbw_GBps, want, rel=rel, what=f"all_reduce {size} B busbw",
                     unit="GB/s", names=("model", "measured"))


def test_hgx_h200_model_without_entries_is_reasonable(h200x2_rows, shared_cluster, shared_profile):
    c = shared_cluster("hgx-h200", gpus=2)
    p = shared_profile(c.default_profile).model_copy(update={"collectives": [], "link_model": None})
    m = CollectiveModel(c, p)
    err = _errors(m, h200x2_rows)
    # NCCL's structure alone; recorded in docs/collectives.md
    assert err.mean() <= 0.20, f"2x H200 all_reduce 1 MiB-4 GiB without entries: mean error {err.mean():.1%} > 20%"
    assert_close(m.estimate("all_reduce", 2, 4 * GiB).busbw_GBps, 347, rel=0.05, what="all_reduce 4 GiB busbw",
                 unit="GB/s", names=("model", "measured"))


# -- accuracy bar (c): 2 nodes x 8 H100, 8x NDR 400G: published 350-480 GB/s
def test_accuracy_superpod_two_nodes(shared_cluster, shared_profile):
    c = shared_cluster("dgx-h100-superpod", nodes=2)
    m = CollectiveModel(c, shared_profile(c.default_profile))
    r = m.estimate("all_reduce", 16, 8 * GiB)
    # NVLSTree: NVLS inside the node (bwIntra 40 x 0.85 x 7/8 x 2 per channel) and each GPU's 1/8 slice over its
    # own NIC (interBw 48 x 2 on 2 nodes), capped by perChMaxNVLSTreeBw 57.7 x 8 channels = 462 GB/s busbw;
    # tests#309 measured ~470. The flat ring (NVLS off) runs 8 channels x 45 GB/s = 360 on the NICs.
    assert 350 <= r.busbw_GBps <= 480, f"all_reduce 8 GiB on 16 GPUs ({r.algorithm}): {r.busbw_GBps:.1f} GB/s busbw"
    ring = m.estimate("all_reduce", 16, 8 * GiB, algorithm="ring")
    assert 350 * 0.95 <= ring.busbw_GBps <= 480, f"ring all_reduce 8 GiB on 16 GPUs: {ring.busbw_GBps:.1f} GB/s busbw"


def test_a100_azure_log_large_sizes_within_15_percent(shared_cluster, shared_profile):
    rows = [r for r in parse_nccl_tests_log(MEAS / "a100-azure-ndv4" / "all_reduce_8.log")
            if r.get("kind") == "collective" and not r["inplace"] and r["size_bytes"] >= 256 * MiB]
    c = shared_cluster("dgx-a100")
    m = CollectiveModel(c, shared_profile(c.default_profile))
    for r in rows:
        assert_close(m.estimate("all_reduce", 8, r["size_bytes"]).busbw_GBps, r["busbw_GBps"], rel=0.15,
                     what=f"all_reduce {r['size_bytes']} B on 8 A100", unit="GB/s", names=("model", "measured"))


# -- lookup and options
def _profile_with(entries, launch_us=0.0):
    return Profile(name="t", collectives=entries, compute={"kernel_launch_us": launch_us})


def test_entry_time_adds_the_kernel_gap(shared_cluster):
    # entries are launch-free NCCL-level times (CUDA-graph replay); a back-to-back call pays the GPU-side gap
    c = shared_cluster("hgx-h200", gpus=2)
    e = CollectiveEntry(op="all_reduce", ranks=2, segments=[Segment(alpha_us=9, algbw_GBps=100)])
    r0 = CollectiveModel(c, _profile_with([e], 0.0)).estimate("all_reduce", 2, 1e6)
    r2 = CollectiveModel(c, _profile_with([e], 2.0)).estimate("all_reduce", 2, 1e6)
    assert r0.time_s == pytest.approx(9e-6 + 1e6 / 100e9)
    assert r2.time_s - r0.time_s == pytest.approx(2e-6)
    assert r2.latency_s == pytest.approx(11e-6)


def test_most_specific_entry_wins(shared_cluster):
    c = shared_cluster("hgx-h200", gpus=2)
    generic = CollectiveEntry(op="all_reduce", segments=[Segment(alpha_us=100, algbw_GBps=10)])
    exact = CollectiveEntry(op="all_reduce", ranks=2, scope="intra", segments=[Segment(alpha_us=1, algbw_GBps=100)])
    m = CollectiveModel(c, _profile_with([generic, exact]))
    r = m.estimate("all_reduce", 2, 1e9)
    assert r.source == "profile"
    assert r.time_s == pytest.approx(1e-6 + 1e9 / 100e9)
    # a forced algorithm does not use an entry measured with NCCL's own choice
    assert m.estimate("all_reduce", 2, 1e9, algorithm="ring").source == "model"
    # another op falls back to the model
    assert m.estimate("all_gather", 2, 1e9).source == "model"


def test_segment_size_ranges(shared_cluster):
    c = shared_cluster("hgx-h200", gpus=2)
    e = CollectiveEntry(op="all_reduce", segments=[Segment(size_min_bytes=0, size_max_bytes=1000, alpha_us=5,
                                                           algbw_GBps=1), Segment(size_min_bytes=1000, alpha_us=50,
                                                                                  algbw_GBps=100)])
    m = CollectiveModel(c, _profile_with([e]))
    assert m.estimate("all_reduce", 2, 999).latency_s == pytest.approx(5e-6)
    assert m.estimate("all_reduce", 2, 1000).latency_s == pytest.approx(50e-6)


def test_p2p_and_gdr_off_are_slower(shared_cluster, shared_profile):
    c = shared_cluster("dgx-h100")
    p = shared_profile(c.default_profile)
    on = CollectiveModel(c, p, nvls=False).estimate("all_reduce", 8, GiB)
    off = CollectiveModel(c, p.model_copy(update={"links": {}}), nvls=False, p2p=False).estimate("all_reduce", 8, GiB)
    assert off.time_s > 3 * on.time_s
    c2 = shared_cluster("dgx-h100", nodes=2)
    g_on = CollectiveModel(c2, p).estimate("all_reduce", 16, GiB, algorithm="ring")
    g_off = CollectiveModel(c2, p.model_copy(update={"links": {"nvlink": p.links["nvlink"]}}), gdr=False).estimate(
        "all_reduce", 16, GiB, algorithm="ring")
    assert g_off.time_s >= g_on.time_s


def test_every_op_runs_and_respects_lower_bound(h100):
    B = 450e9  # raw NVLink line rate per GPU: nothing point-to-point can beat it
    for op in ("broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "scatter",
               "gather", "send_recv", "barrier"):
        r = h100.estimate(op, 8, 256 * MiB)
        assert r.time_s > 0, f"{op=}"
        if op not in ("barrier",) and r.algorithm not in ("nvls", "nvls_tree"):
            assert r.busbw_GBps * 1e9 <= B, f"{op=}"


def test_bad_inputs(h100):
    with pytest.raises(ClusterSimError):
        h100.estimate("all_reduce", 9, 10)
    with pytest.raises(ClusterSimError):
        h100.estimate("all_reduce", 8, -1)
    with pytest.raises(ClusterSimError):
        h100.estimate("all_reduce", 8, 10, algorithm="bogus")
    with pytest.raises(ClusterSimError):
        h100.estimate("broadcast", 8, 10, algorithm="tree")
    with pytest.raises(ClusterSimError):
        h100.estimate("all_reduce", [0, 0], 10)
    with pytest.raises(ClusterSimError):
        resolve_profile("no-such-profile")


def test_every_shipped_profile_loads():
    root = Path(__file__).resolve().parents[2] / "profiles"
    for f in sorted(p for p in root.glob("*.yaml") if p.name != "inputs.yaml"):  # inputs.yaml: the recipe's, no profile
        assert resolve_profile(f).name == f.stem


# -- model check: the NCCL-structured model WITHOUT profile entries against our measured NCCL-level times
#    (CUDA-graph bench, 2 and 4 H200 on NVSwitch; tests/data/h200x{2,4}/bench-graph.jsonl). The bench rows exclude
#    the launch, so the model's kernel gap is taken off. Table and discussion: docs/collectives.md.
CHECK_OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send_recv")
CHECK_SIZES = (MiB, 16 * MiB, 256 * MiB, 4 * GiB)


def _bench_nccl(n):
    import json

    rows = [json.loads(line) for line in (MEAS / f"h200x{n}" / "bench-graph.jsonl").read_text().splitlines()]
    return {(r["op"], r["size_bytes"]): r for r in rows if r.get("kind") == "collective" and r.get("mode") == "nccl"}


def _model_check(c, prof, n):
    m = CollectiveModel(c, prof.model_copy(update={"collectives": [], "link_model": None}))
    meas = _bench_nccl(n)
    out = {}
    for op in CHECK_OPS:
        for S in CHECK_SIZES:
            r = m.estimate(op, n, S)
            assert r.source == "model"
            t = r.time_s - m.launch_s
            out[(op, S)] = (t * 1e6 - meas[(op, S)]["time_us"]) / meas[(op, S)]["time_us"]
    return out


@pytest.mark.parametrize("n", [2, 4])
def test_model_without_entries_against_measured_bench(n, shared_cluster, shared_profile):
    c = shared_cluster("hgx-h200", gpus=n)
    err = _model_check(c, shared_profile(c.default_profile), n)
    # large messages: within 16% for every op (worst: 2-rank all_gather/reduce_scatter, -15%)
    assert all(abs(err[(op, 4 * GiB)]) <= 0.16 for op in CHECK_OPS), err
    # the model is never much slower than NCCL (it is the optimistic side at mid sizes: its ramp is too fast)
    assert max(err.values()) <= 0.06, err
    # mean over the 24 points: 2 ranks 17.3%, 4 ranks 13.3% (docs/collectives.md)
    assert np.mean(np.abs(list(err.values()))) <= 0.20, err
    # all_reduce and broadcast, the ring ops NCCL's tuning model describes best, from 256 MiB on: within 16%
    assert all(abs(err[(op, S)]) <= 0.16 for op in ("all_reduce", "broadcast") for S in (256 * MiB, 4 * GiB))


@pytest.mark.xfail(strict=True, reason="known gap: measured all_gather/reduce_scatter on 2 H200 reach 270 GB/s busbw "
                   "at 1 GiB against 330 for all_reduce; NCCL's own tuning table (nccl_debug.log) predicts the same "
                   "busbw for both, and so does the model (docs/collectives.md)")
def test_model_reproduces_the_all_gather_busbw_deficit(shared_cluster, shared_profile):
    c = shared_cluster("hgx-h200", gpus=2)
    m = CollectiveModel(c, shared_profile(c.default_profile).model_copy(update={"collectives": [], "link_model": None}))
    ag, ar = m.estimate("all_gather", 2, GiB), m.estimate("all_reduce", 2, GiB)
    assert ag.busbw_GBps / ar.busbw_GBps == pytest.approx(270 / 330, rel=0.05)
