"""CollectiveModel: profile lookup, data paths, accuracy bar against published and measured numbers."""

from pathlib import Path

import numpy as np
import pytest

from clustersim.calibration.nccl_tests import parse_nccl_tests_log
from clustersim.collectives import CollectiveModel, load_profile_for, resolve_profile
from clustersim.config.profile import CollectiveEntry, Profile, Segment
from clustersim.errors import ClusterSimError
from clustersim.topology import load_cluster

DATA = Path(__file__).resolve().parents[1] / "data"
GiB, MiB = 2**30, 2**20


@pytest.fixture(scope="module")
def h100():
    c = load_cluster("dgx-h100")
    return CollectiveModel(c, load_profile_for(c))


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


def test_accuracy_hgx_h200_two_gpus_shipped_profile(h200x2_rows):
    c = load_cluster("hgx-h200", gpus=2)
    m = CollectiveModel(c, load_profile_for(c))
    err = _errors(m, h200x2_rows)
    assert err.mean() <= 0.10
    assert m.estimate("all_reduce", 2, 8).time_s * 1e6 == pytest.approx(13, rel=0.15)
    assert m.estimate("all_reduce", 2, MiB).busbw_GBps == pytest.approx(60, rel=0.15)
    assert m.estimate("all_reduce", 2, GiB).busbw_GBps == pytest.approx(330, rel=0.05)
    assert m.estimate("all_reduce", 2, 4 * GiB).busbw_GBps == pytest.approx(347, rel=0.05)


def test_hgx_h200_model_without_entries_is_reasonable(h200x2_rows):
    c = load_cluster("hgx-h200", gpus=2)
    p = load_profile_for(c).model_copy(update={"collectives": []})
    m = CollectiveModel(c, p)
    err = _errors(m, h200x2_rows)
    assert err.mean() <= 0.20  # NCCL's structure alone; recorded in docs/collectives.md
    assert m.estimate("all_reduce", 2, 4 * GiB).busbw_GBps == pytest.approx(347, rel=0.05)


# -- accuracy bar (c): 2 nodes x 8 H100, 8x NDR 400G: published 350-480 GB/s
def test_accuracy_superpod_two_nodes():
    c = load_cluster("dgx-h100-superpod", nodes=2)
    m = CollectiveModel(c, load_profile_for(c))
    r = m.estimate("all_reduce", 16, 8 * GiB)
    # NVLSTree: NVLS inside the node (bwIntra 40 x 0.85 x 7/8 x 2 per channel) and each GPU's 1/8 slice over its
    # own NIC (interBw 48 x 2 on 2 nodes), capped by perChMaxNVLSTreeBw 57.7 x 8 channels = 462 GB/s busbw;
    # tests#309 measured ~470. The flat ring (NVLS off) runs 8 channels x 45 GB/s = 360 on the NICs.
    assert 350 <= r.busbw_GBps <= 480
    ring = m.estimate("all_reduce", 16, 8 * GiB, algorithm="ring")
    assert 350 * 0.95 <= ring.busbw_GBps <= 480


def test_a100_azure_log_large_sizes_within_15_percent():
    rows = [r for r in parse_nccl_tests_log(DATA / "a100-azure-ndv4" / "all_reduce_8.log")
            if r.get("kind") == "collective" and not r["inplace"] and r["size_bytes"] >= 256 * MiB]
    c = load_cluster("dgx-a100")
    m = CollectiveModel(c, load_profile_for(c))
    for r in rows:
        assert m.estimate("all_reduce", 8, r["size_bytes"]).busbw_GBps == pytest.approx(r["busbw_GBps"], rel=0.15)


# -- lookup and options
def _profile_with(entries):
    return Profile(name="t", collectives=entries)


def test_most_specific_entry_wins():
    c = load_cluster("hgx-h200", gpus=2)
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


def test_segment_size_ranges():
    c = load_cluster("hgx-h200", gpus=2)
    e = CollectiveEntry(op="all_reduce", segments=[Segment(size_min_bytes=0, size_max_bytes=1000, alpha_us=5,
                                                           algbw_GBps=1), Segment(size_min_bytes=1000, alpha_us=50,
                                                                                  algbw_GBps=100)])
    m = CollectiveModel(c, _profile_with([e]))
    assert m.estimate("all_reduce", 2, 999).latency_s == pytest.approx(5e-6)
    assert m.estimate("all_reduce", 2, 1000).latency_s == pytest.approx(50e-6)


def test_p2p_and_gdr_off_are_slower():
    c = load_cluster("dgx-h100")
    p = load_profile_for(c)
    on = CollectiveModel(c, p, nvls=False).estimate("all_reduce", 8, GiB)
    off = CollectiveModel(c, p.model_copy(update={"links": {}}), nvls=False, p2p=False).estimate("all_reduce", 8, GiB)
    assert off.time_s > 3 * on.time_s
    c2 = load_cluster("dgx-h100", nodes=2)
    g_on = CollectiveModel(c2, p).estimate("all_reduce", 16, GiB, algorithm="ring")
    g_off = CollectiveModel(c2, p.model_copy(update={"links": {"nvlink": p.links["nvlink"]}}), gdr=False).estimate(
        "all_reduce", 16, GiB, algorithm="ring")
    assert g_off.time_s >= g_on.time_s


def test_every_op_runs_and_respects_lower_bound(h100):
    B = 450e9  # raw NVLink line rate per GPU: nothing point-to-point can beat it
    for op in ("broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "scatter",
               "gather", "send_recv", "barrier"):
        r = h100.estimate(op, 8, 256 * MiB)
        assert r.time_s > 0
        if op not in ("barrier",) and r.algorithm not in ("nvls", "nvls_tree"):
            assert r.busbw_GBps * 1e9 <= B


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
    root = Path(__file__).resolve().parents[2] / "calibrate" / "profiles"
    for f in sorted(root.glob("*.yaml")):
        assert resolve_profile(f).name == f.stem
