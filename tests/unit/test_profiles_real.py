"""The shipped default profiles are what `calibrate/make_profiles.py` makes from the raw measurements."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from clustersim.collectives import resolve_profile

ROOT = Path(__file__).resolve().parents[2]
RAW = ROOT / "calibrate" / "raw"
OPS = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send_recv"}


def rows(path: Path, kind: str) -> list[dict]:
    out = []
    for line in path.read_text().splitlines():
        r = json.loads(line)
        if r.get("kind") == kind:
            out.append(r)
    return out


@pytest.fixture(scope="module")
def h200():
    return resolve_profile("hgx-h200")


@pytest.fixture(scope="module")
def h100():
    return resolve_profile("dgx-h100")


def test_shipped_profiles_are_regenerated_from_the_raw_files():
    r = subprocess.run([sys.executable, str(ROOT / "calibrate" / "make_profiles.py"), "--check"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    for name in ("hgx-h200", "dgx-h100"):
        head = (ROOT / "calibrate" / "profiles" / f"{name}.yaml").read_text().splitlines()[:3]
        assert any("python calibrate/make_profiles.py" in line for line in head)


def test_h200_source_is_the_measurement(h200):
    meta = rows(RAW / "h200x2" / "bench-graph.jsonl", "meta")[0]
    s = h200.source
    assert s.measured is True and s.nvls is False and h200.nvls is False
    assert (s.gpu, s.driver, s.nccl_version, s.torch_version) == (meta["gpu"], meta["driver"], meta["nccl_version"],
                                                                   meta["torch_version"])
    assert s.date == meta["date"][:10]
    assert set(s.files) == {"raw/h200x2/bench-graph.jsonl", "raw/h200x4/bench-graph.jsonl",
                            "raw/h200x2/bench-run1.jsonl"}
    for f in s.files:
        assert (ROOT / "calibrate" / f).is_file()


def test_h200_collective_entries_cover_ops_modes_and_rank_counts(h200):
    keys = {(e.op, e.mode, e.ranks, e.scope) for e in h200.collectives}
    want = {(op, mode, n, "intra") for op in OPS for mode in ("nccl", "eager", "framework") for n in (2, 4)}
    assert keys == want
    for e in h200.collectives:
        assert e.algorithm is None and e.protocol is None  # NCCL's own choice
        assert e.segments[0].size_min_bytes == 0 and e.segments[-1].size_max_bytes is None
        for a, b in zip(e.segments, e.segments[1:]):
            assert a.size_max_bytes == b.size_min_bytes
        assert any(s.algbw_ci_GBps is not None for s in e.segments)


def test_h200_entries_follow_the_measured_nccl_level_times(h200):
    """In-sample: every measured size of every NCCL-level entry within 10% (the held-out Bar is in test_fit)."""
    from clustersim.calibration.uncertainty import predict

    for n in (2, 4):
        for r in rows(RAW / f"h200x{n}" / "bench-graph.jsonl", "collective"):
            if r["mode"] != "nccl":
                continue
            e = next(x for x in h200.collectives if (x.op, x.mode, x.ranks) == (r["op"], "nccl", n))
            t = predict(e, r["size_bytes"])[0] * 1e6
            assert t == pytest.approx(r["time_us"], rel=0.10), (r["op"], n, r["size_bytes"])


def test_h200_modes_are_kept_apart(h200):
    def small(mode):
        e = next(x for x in h200.collectives if (x.op, x.mode, x.ranks) == ("all_reduce", mode, 2))
        return e.segments[0].alpha_us + 1024 / (e.segments[0].algbw_GBps * 1e3)

    # CUDA-graph NCCL level ~9 us < back-to-back eager ~23 us < one isolated call ~33 us (1 KiB, 2 ranks)
    assert 7 < small("nccl") < 12 < 18 < small("eager") < 28 < small("framework") < 45


def test_h200_host_and_compute_from_the_rows(h200):
    fw = [r["time_us"] for f in ("h200x2", "h200x4") for r in rows(RAW / f / "bench-graph.jsonl", "framework_call")]
    assert h200.host.framework_call_us == pytest.approx(statistics.median(fw), rel=1e-5)
    assert 0 < h200.host.per_call_overhead_us < h200.host.framework_call_us
    ci = h200.host.comm_init
    assert ci.measured_ranks == [2, 4] and ci.extrapolated is True
    run1 = RAW / "h200x2" / "bench-run1.jsonl"
    c = h200.compute
    assert c.hbm_bandwidth_GBps == pytest.approx(rows(run1, "hbm")[0]["bandwidth_GBps"], rel=1e-5)
    assert c.kernel_launch_us == pytest.approx(rows(run1, "launch")[0]["overhead_us"], rel=1e-5)
    assert len(c.gemm_table) == len(rows(run1, "gemm")) == 24
    assert 0.6 < c.gemm_efficiency < 0.85  # of 989.4 dense bf16 TFLOP/s


def test_h200_link_classes_stay_published(h200):
    assert h200.links["nvlink"].bandwidth_GBps == 370.8 and h200.links["nvlink"].latency_us == 3.4
    assert "published" in h200.source.notes and "not used" in h200.source.notes


def test_h100_is_published_links_plus_measured_compute(h100):
    bench = RAW / "h100" / "bench.jsonl"
    assert h100.collectives == [] and h100.nvls is True
    assert h100.links["nvlink"].bandwidth_GBps == 370.8
    assert h100.source.gpu == rows(bench, "meta")[0]["gpu"] and h100.source.files == ["raw/h100/bench.jsonl"]
    assert "No multi-GPU H100 has been measured" in h100.source.notes
    c = h100.compute
    assert c.hbm_bandwidth_GBps == pytest.approx(rows(bench, "hbm")[0]["bandwidth_GBps"], rel=1e-5)
    assert c.kernel_launch_us == pytest.approx(rows(bench, "launch")[0]["overhead_us"], rel=1e-5)
    assert len(c.gemm_table) == 24 and 0.6 < c.gemm_efficiency < 0.85
