"""The A100 link model: ``azure-ndv4``'s ``link_model`` section, fitted on real nccl-tests logs, predicts a held-out scale.

``profiles/make_profiles.py`` fits the section on the all_reduce logs of Azure NDv4 at 8 GPUs
(one node) and 16 GPUs (two nodes) (``profiles/measurements/a100-azure-ndv4``) at the ``azure-ndv4`` preset's line
rates; the 32-GPU log of the same set (four nodes, ``validation/a100-link-model-32gpu-heldout_a100-azure-ndv4_2026-11-26/all_reduce_32.log``)
never enters the fit: the profile-driven simulator predicts it (issue 13's transfer check:
within 10% mean at >= 1 MiB, 20% below).

Run ``python tests/unit/test_a100_link_model.py`` to print the per-size table of the held-out check.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pytest

from clustersim.calibration.fit import read_measurements
from clustersim.calibration.transfer_report import model_rows
from clustersim.collectives.model import CollectiveModel
from clustersim.collectives.profiles import load_profile_for
from clustersim.topology import load_cluster

ROOT = Path(__file__).resolve().parents[2]
#: the fitted logs (8 and 16 GPUs: profile inputs) and the held-out one (32 GPUs: its study folder)
LOGS = {8: ROOT / "profiles" / "measurements" / "a100-azure-ndv4" / "all_reduce_8.log",
        16: ROOT / "profiles" / "measurements" / "a100-azure-ndv4" / "all_reduce_16.log",
        32: ROOT / "validation" / "a100-link-model-32gpu-heldout_a100-azure-ndv4_2026-11-26" / "all_reduce_32.log"}
MiB = 2**20


@cache
def check(gpus: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, set[str]]:
    """(sizes, measured us, predicted us, sources) of ``all_reduce_<gpus>.log`` on ``azure-ndv4`` with its profile."""
    rows = model_rows(read_measurements([str(LOGS[gpus])]).rows)
    cluster = load_cluster("azure-ndv4", gpus=gpus)
    model = CollectiveModel(cluster, load_profile_for(cluster))
    res = [model.estimate("all_reduce", gpus, r["size_bytes"]) for r in rows]
    return (np.array([r["size_bytes"] for r in rows]), np.array([r["time_us"] for r in rows]),
            np.array([x.time_s * 1e6 for x in res]), {x.source for x in res})


def errors(gpus: int) -> tuple[float, float]:
    """Mean |predicted / measured - 1| at >= 1 MiB and below."""
    size, meas, pred, _ = check(gpus)
    err = np.abs(pred / meas - 1)
    return float(err[size >= MiB].mean()), float(err[size < MiB].mean())


@pytest.fixture(scope="module")
def a100(shared_cluster, shared_profile):
    cluster = shared_cluster("azure-ndv4", gpus=16)
    return cluster, shared_profile(cluster.default_profile)


def test_section_is_fitted_on_8_and_16_gpus_at_the_topologys_line_rates(a100):
    cluster, prof = a100
    lm = prof.link_model
    assert lm is not None and set(lm.links) == {"nvlink", "network"}
    pv = lm.provenance
    assert pv.files == ["profiles/measurements/a100-azure-ndv4/all_reduce_8.log", "profiles/measurements/a100-azure-ndv4/all_reduce_16.log"]
    assert (pv.ranks, pv.nodes) == ([8, 16], [1, 2])         # the 32-GPU log stays out
    ctx = CollectiveModel(cluster, None).context(tuple(range(16)))
    assert pv.line_rates_GBps == {"nvlink": ctx.intra_line, "network": ctx.net_line} == {"nvlink": 300.0,
                                                                                          "network": 25.0}
    assert pv.nics_per_node == ctx.nccl.nics == 8
    assert "Azure NDv4" in pv.method and "not a DGX A100" in pv.method and "only all_reduce was measured" in pv.method
    assert pv.residual_median_pct <= 3.0


def test_simulator_evaluates_the_section_across_nodes(a100):
    """The simulated time is the section's link model on the topology's line rates plus the kernel gap."""
    from clustersim.collectives.linkmodel import from_profile

    cluster, prof = a100
    lm = from_profile(prof.link_model)
    assert (lm.net_line_GBps, lm.nics_per_node) == (25.0, 8)
    m = CollectiveModel(cluster, prof)
    for size in (4096, 3 * MiB, 2**30):
        e = lm.estimate("all_reduce", 16, 2, size, intra_line_GBps=300.0, net_line_GBps=25.0, nics_per_node=8, sm=80)
        assert m.estimate("all_reduce", 16, size).time_s == pytest.approx(e.time_us * 1e-6 + m.launch_s, rel=1e-9), \
            f"{size=}"


def test_unmeasured_collectives_run_on_the_fitted_links_with_all_reduces_floor(a100):
    """NCCL's table collectives share the fitted link parameters; point-to-point ops keep NCCL's constants
    (across nodes the link model would give every GPU of an all_to_all the node's 8 NICs together)."""
    cluster, prof = a100
    ops = prof.link_model.ops
    assert set(ops) == {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce"}
    assert {o.floor_us for o in ops.values()} == {ops["all_reduce"].floor_us}
    m = CollectiveModel(cluster, prof)
    for op in ("all_gather", "reduce_scatter", "broadcast", "reduce"):
        assert m.estimate(op, 16, 64 * MiB).source == "link_model"
    for op in ("all_to_all", "send_recv"):
        assert m.estimate(op, 16, 64 * MiB).source == "model"


def test_dgx_a100_keeps_its_published_link_classes(shared_cluster, shared_profile):
    """The NDv4 fit is that machine's (its host and fabric): the DGX A100 preset, whose published runs
    (Selene) the validation tables use, has no link model and keeps NCCL's constants."""
    cluster = shared_cluster("dgx-a100", gpus=16)
    prof = shared_profile(cluster.default_profile)
    assert prof.name == "dgx-a100" and prof.link_model is None
    assert CollectiveModel(cluster, prof).estimate("all_reduce", 16, 64 * MiB).source == "model"


def test_cannon_4xa100_keeps_nccls_constants(shared_cluster, shared_profile):
    """Its node differs from the one measured: 4 GPUs NVLink-connected in pairs (100 GB/s per pair, no
    NVSwitch) and one 12.5 GB/s NIC per node for 4 GPUs, against 300 GB/s per GPU and 8 x 25 GB/s."""
    cluster = shared_cluster("cannon-4xa100", nodes=2)
    prof = shared_profile(cluster.default_profile)
    assert prof.link_model is None
    ctx = CollectiveModel(cluster, None).context(tuple(range(8)))
    assert (ctx.intra_line, ctx.net_line, ctx.nccl.nics) == (100.0, 12.5, 1)
    assert CollectiveModel(cluster, prof).estimate("all_reduce", 8, 64 * MiB).source == "model"


def test_simulator_reproduces_the_fitted_logs_within_3_percent_median():
    """Issue 13's bar for the residual at the fit points, here through the simulator (kernel gap included)."""
    err = []
    for gpus in (8, 16):
        _, meas, pred, sources = check(gpus)
        assert sources == {"link_model"}
        err.append(np.abs(pred / meas - 1))
    assert np.median(np.concatenate(err)) <= 0.03


def test_held_out_32_gpus_at_1_MiB_and_above_within_10_percent():
    *_, sources = check(32)
    assert sources == {"link_model"}
    large, _ = errors(32)
    assert large <= 0.10


@pytest.mark.xfail(strict=True, reason="issue 13 target not met: 8+16 -> 32 A100 GPUs below 1 MiB is 22.0% mean "
                   "through the azure-ndv4 profile (>= 1 MiB: 7.0%); the 32-GPU log's small sizes sit 20-60 us above "
                   "what NCCL's tree adds for a third and fourth node (docs/calibration.md)")
def test_held_out_32_gpus_below_1_MiB_within_20_percent():
    _, small = errors(32)
    assert small <= 0.20


if __name__ == "__main__":
    size, meas, pred, _ = check(32)
    print("| size (B) | measured (us) | predicted (us) | error |")
    print("|---:|---:|---:|---:|")
    for s, t, p in zip(size, meas, pred):
        print(f"| {int(s)} | {t:.1f} | {p:.1f} | {100 * (p / t - 1):+.1f}% |")
    for n in (8, 16, 32):
        large, small = errors(n)
        print(f"{n} GPUs: mean |error| >= 1 MiB {100 * large:.1f}%, < 1 MiB {100 * small:.1f}%")
