"""Closed forms and NCCL tuning-model structure (clustersim.collectives.formulas)."""

import math
import subprocess
import sys

import pytest

from clustersim.collectives import formulas as F
from clustersim.errors import ClusterSimError


def test_formulas_do_not_import_simpy():
    code = "import sys, clustersim.collectives, clustersim.collectives.formulas; print('simpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("op,n,f", [("all_reduce", 8, 1.75), ("all_reduce", 2, 1.0), ("all_gather", 4, 0.75),
                                    ("reduce_scatter", 8, 0.875), ("all_to_all", 2, 0.5), ("broadcast", 8, 1.0),
                                    ("reduce", 3, 1.0), ("send_recv", 2, 1.0), ("gather", 4, 0.75)])
def test_busbw_factors_match_nccl_tests(op, n, f):
    assert F.busbw_factor(op, n) == pytest.approx(f)


def test_bad_op_and_ranks():
    with pytest.raises(ClusterSimError):
        F.busbw_factor("allreduce", 2)
    with pytest.raises(ClusterSimError):
        F.busbw_factor("all_reduce", 0)


def test_ring_closed_forms():
    a, B, S = 2e-6, 100e9, 2**30
    assert F.ring_all_reduce_time(8, S, a, B) == pytest.approx(14 * a + 1.75 * S / B)
    assert F.ring_all_gather_time(8, S, a, B) == pytest.approx(7 * a + 0.875 * S / B)
    assert F.ring_all_reduce_time(1, S, a, B) == 0.0


def test_halving_doubling_and_tree_log_terms():
    a, B, S = 1e-6, 50e9, 1e6
    assert F.halving_doubling_all_reduce_time(16, S, a, B) == pytest.approx(8 * a + 2 * 15 / 16 * S / B)
    # non power of two: MPICH's (2 floor(lg p) + 2) alpha
    t6 = F.halving_doubling_all_reduce_time(6, S, a, 1e30)
    assert t6 == pytest.approx(6 * a)
    assert F.tree_all_reduce_time(16, S, a, B) == pytest.approx(8 * a + S / B)


def test_hierarchical_reduces_to_ring_on_one_node():
    S, a, B = 1e8, 1e-6, 1e11
    assert F.hierarchical_all_reduce_time(1, 8, S, a, B, 5e-6, 1e10) == pytest.approx(
        F.ring_all_reduce_time(8, S, a, B))


def test_channel_search_reproduces_nccl_h100_graph():
    # 18 NVLinks x 20.6 = 370.8 GB/s: 6 x 60 found, then duplicated to 12 x 30 (the 2xH200 graph dump says
    # nchannels=12 speedintra=30)
    n, s = F.search_channels(370.8, F.SPEEDS_INTRA[2], 370.8)
    assert (n, s) == (6, 60)
    assert F.dup_channels(n, s, 90) == (12, 30)


def test_nccl_table_worked_example_8xh100():
    # nccl-model.md section 1.9: ring LL 15.0 us / 80.6 GB/s; LL128 40.6 us / 189.3; Simple 56.0 us / 205.7
    ctx = F.NcclContext(n=8, nodes=1, ppn=8, sm=90, intra_hw="nvlink", intra_bw=370.8, nic_bw=0, nics=0)
    cells = {(c.algorithm, c.protocol): c for c in F.nccl_table("all_reduce", ctx)}
    assert cells[("ring", "ll")].lat_us == pytest.approx(15.0)
    assert cells[("ring", "ll")].algbw_GBps == pytest.approx(141 * 8 / 14, rel=1e-3)
    assert cells[("ring", "ll128")].lat_us == pytest.approx(40.6)
    assert cells[("ring", "ll128")].algbw_GBps == pytest.approx(331.2 * 8 / 14, rel=1e-3)
    assert cells[("ring", "simple")].lat_us == pytest.approx(56.0)
    assert cells[("ring", "simple")].algbw_GBps == pytest.approx(360 * 8 / 14, rel=1e-3)
    assert ("nvls", "simple") not in cells  # NVLS off in this context


def test_nvls_busbw_close_to_published_480():
    ctx = F.NcclContext(n=8, nodes=1, ppn=8, sm=90, intra_hw="nvlink", intra_bw=370.8, nic_bw=0, nics=0, nvls=True)
    cell = next(c for c in F.nccl_table("all_reduce", ctx) if c.algorithm == "nvls")
    assert cell.lat_us == pytest.approx(25.0)
    assert cell.algbw_GBps * 1.75 == pytest.approx(480, rel=0.05)  # nccl#1455, tests#212


def test_tree_correction_and_throttling():
    assert F.tree_correction("simple", 32) == 1.0
    assert F.tree_correction("simple", 64 * 2**11) == 0.5
    assert F.throttle_fraction(2**30, 24, "simple", 8, "ring") == 1.0
    f_small = F.throttle_fraction(64 * 512 * 3, 24, "simple", 8, "ring")
    assert f_small == pytest.approx(3 / 24)
    assert F.throttle_fraction(8, 24, "simple", 8, "ring") < f_small  # threads halved too


def test_lower_bounds_are_bus_factor_times_size_over_bw():
    assert F.lower_bound("all_reduce", 8, 1e9, 1e11) == pytest.approx(1.75e-2)
    assert F.all_gather_lower_bound(4, 1e9, 1e11) == pytest.approx(0.75e-2)
    assert F.lower_bound("all_reduce", 1, 1e9, 1e11) == 0.0
    assert math.isclose(F.ring_broadcast_time(2, 1e6, 1e-6, 1e9), 1e-6 + 1e-3)


def _nccl_throttle_loop(S, channels, proto, n, algo):
    """enqueue.cc topoGetAlgoInfo, literally: drop channels, then halve threads."""
    nt0 = F.NVLS_THREADS if algo in ("nvls", "nvls_tree") else F.MAX_THREADS[proto]
    thr = F.THREAD_THRESHOLD[proto] * (n if proto == "ll" and algo == "ring" else 1)
    nc, nt = channels, nt0
    while S < nc * nt * thr:
        if nc >= 2:
            nc -= 1
        elif nt % 128 == 0:
            nt //= 2
        else:
            break
    return nc / channels * nt / nt0


def test_throttle_is_the_envelope_of_nccl_loop():
    """The loop keeps thr to 2 thr bytes per thread; the model takes its envelope at thr (where the loop's
    steps land: equal there, never below it, never 2x above it) so that a larger size is never faster."""
    import random

    rng = random.Random(0)
    for _ in range(3000):
        S = int(2 ** rng.uniform(0, 28))
        ch, proto = rng.randint(1, 32), rng.choice(F.PROTOCOLS)
        n, algo = rng.randint(2, 64), rng.choice(["ring", "tree", "nvls"])
        loop, env = _nccl_throttle_loop(S, ch, proto, n, algo), F.throttle_fraction(S, ch, proto, n, algo)
        assert loop * (1 - 1e-12) <= env <= 2 * loop * (1 + 1e-12)
        assert F.throttle_fraction(2 * S, ch, proto, n, algo) >= env
        nt0 = F.NVLS_THREADS if algo in ("nvls", "nvls_tree") else F.MAX_THREADS[proto]
        thr = F.THREAD_THRESHOLD[proto] * (n if proto == "ll" and algo == "ring" else 1)
        step = rng.randint(1, ch) * nt0 * thr   # a size where the loop lands on whole channels
        assert F.throttle_fraction(step, ch, proto, n, algo) == pytest.approx(_nccl_throttle_loop(step, ch, proto, n, algo))


def test_formulas_import_needs_only_the_standard_library():
    """The GPU bench imports busbw_factor from formulas where only torch may be installed."""
    import subprocess
    import sys

    code = ("import sys; import clustersim.collectives.formulas; "
            "print(sorted(m for m in ('numpy', 'pydantic', 'yaml', 'simpy', 'networkx') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
