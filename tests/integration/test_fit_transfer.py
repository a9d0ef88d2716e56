"""Transfer accuracy of the link-model fitter (issue 13) on real nccl-tests measurements.

These are honest accuracy tests: the rows are real logs (2x H200 CUDA-graph bench, Azure
NDv4 A100 8/16/32 GPUs), the fit sees half of them, the assertions are issue 13's
"Done when" thresholds where the fitter meets them. The thresholds it does not meet yet
are written as strict xfails, so they fail loudly the day they pass.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from clustersim.calibration.fit import read_measurements
from clustersim.calibration.fit.linkmodel import fit_link_model, refine
from clustersim.calibration.fit.transfer import band_factor, scale_check, size_check, split_sizes

ROOT = Path(__file__).resolve().parents[2]
MEAS = ROOT / "profiles" / "measurements"
VALIDATION = ROOT / "validation"

# moved from tests/unit: its fits of real logs take seconds each, the CLI report a minute on two cores
pytestmark = pytest.mark.slow

H200 = {"intra_line_GBps": 450.0, "sm": 90}         # 18 NVLink4 x 25 GB/s per direction; Hopper
#: Azure NDv4: 12 NVLink3 x 25 GB/s per GPU; 8 HDR 200 Gb/s NICs per node (25 GB/s each); Ampere
A100 = {"intra_line_GBps": 300.0, "net_line_GBps": 25.0, "nics_per_node": 8, "sm": 80}


def _rows(*files: Path) -> list[dict]:
    m = read_measurements([str(f) for f in files])
    return [r for r in m.rows if r["kind"] == "collective" and r.get("mode", "nccl") == "nccl"
            and not r.get("nvls") and r.get("algorithm") is None and r.get("protocol") is None]


@pytest.fixture(scope="module")
def h200x2():
    return _rows(MEAS / "h200x2" / "bench-graph.jsonl")


@pytest.fixture(scope="module")
def h200x4():
    return _rows(MEAS / "h200x4" / "bench-graph.jsonl")


@pytest.fixture(scope="module")
def a100():
    a100 = {8: MEAS / "a100-azure-ndv4" / "all_reduce_8.log", 16: MEAS / "a100-azure-ndv4" / "all_reduce_16.log",
            32: VALIDATION / "a100-link-model-32gpu-heldout_a100-azure-ndv4_2026-11-26" / "all_reduce_32.log"}
    return {n: _rows(p) for n, p in a100.items()}


@pytest.fixture(scope="module")
def h200x2_size(h200x2):
    return size_check(h200x2, parity=1, **H200)


@pytest.fixture(scope="module")
def a100_size(a100):
    return size_check(a100[8] + a100[16], parity=1, **A100)


@pytest.fixture(scope="module")
def a100_scale(a100):
    (row,) = scale_check(a100[8] + a100[16], a100[32], **A100)
    return row


def test_h200x2_size_check_meets_mean_thresholds(h200x2, h200x2_size):
    assert {r["op"] for r in h200x2} == {"all_reduce", "all_gather", "reduce_scatter", "broadcast",
                                         "all_to_all", "send_recv"}
    for row in h200x2_size["table"]:
        assert row.mean_large <= 0.05, row
        assert row.mean_small <= 0.15, row


def test_a100_size_check_meets_mean_and_residual_thresholds(a100_size):
    sc = a100_size
    assert sc["fit_residual_median"] <= 0.03, f"A100 8+16 fit residual median {sc['fit_residual_median']:.2%} > 3%"
    (row,) = sc["table"]
    assert row.mean_large <= 0.05 and row.mean_small <= 0.15, row


def test_h200x2_link_model_residual_at_fit_points_within_3_percent(h200x2_size):
    """Met since the start-up transient (2026-11-27): 3.78% -> 2.58%. Without it one line per protocol cannot follow
    the 16 MiB-4 GiB drift of the marginal bus bandwidth (all_reduce 270 -> 354 GB/s)."""
    med = h200x2_size["fit_residual_median"]
    assert med <= 0.03, f"2x H200 fit residual median {med:.2%} > 3%"


def test_nccl_choice_follows_nccls_own_table():
    """The protocol switch comes from NCCL's table, not from the fitted times: 2 ranks switch LL -> Simple
    between 1 and 2 MiB (the measured 16.6 -> 30.5 us jump), 4 ranks later; across nodes the tree runs small sizes."""
    from clustersim.calibration.fit.linkmodel import PROTOS, nccl_choice

    sizes = 2.0 ** np.arange(10, 33)
    two = nccl_choice("all_reduce", 2, 1, sizes, sm=90, intra_line_GBps=450.0)
    assert [PROTOS[i % 3] for i in two[10:12]] == ["ll", "simple"] and (two < 3).all()
    four = nccl_choice("all_reduce", 4, 1, sizes, sm=90, intra_line_GBps=450.0)
    assert four[11] % 3 == 0 and four[-1] == 2          # still LL at 2 MiB; ring Simple at 4 GiB
    multi = nccl_choice("all_reduce", 32, 4, sizes, sm=80, **{k: v for k, v in A100.items() if k != "sm"})
    assert multi[0] // 3 == 1 and multi[-1] == 2        # tree at 1 KiB, ring Simple at 4 GiB
    assert (nccl_choice("send_recv", 2, 1, sizes, sm=90, intra_line_GBps=450.0) == -1).all()


def test_size_check_worst_point_within_12_percent(h200x2_size, a100_size):
    rows = [("2x H200", r) for r in h200x2_size["table"]] + [("A100 8+16", r) for r in a100_size["table"]]
    where, row = max(rows, key=lambda x: x[1].worst)
    assert row.worst <= 0.12, f"{where} {row.op}: worst point {row.worst:.1%} > 12% ({row})"


def test_a100_scale_check_8_16_to_32_at_1_MiB_and_above(a100_scale):
    assert a100_scale.mean_large <= 0.10, a100_scale


@pytest.mark.xfail(strict=True, reason="issue 13 target not met: 8+16 -> 32 A100 GPUs below 1 MiB is 21.9% "
                   "(>= 1 MiB: 7.0%): the 32-GPU log's small sizes are 53-131 us, 20-60 us above what NCCL's tree "
                   "structure adds for a third and fourth node from the 16-GPU fit; its 1-2 KiB rows disagree "
                   "between out-of-place and in-place by 1.5-2.7x (noise no fit follows)")
def test_a100_scale_check_8_16_to_32_below_1_MiB(a100_scale):
    assert a100_scale.mean_small <= 0.20, a100_scale


@pytest.fixture(scope="module")
def h200_scale(h200x2, h200x4):
    return {row.op: row for row in scale_check(h200x2, h200x4, **H200)}


@pytest.mark.parametrize("op", ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all", "send_recv"])
def test_h200_scale_check_2_to_4(h200_scale, op):
    row = h200_scale[op]
    assert row.mean_large <= 0.10 and row.mean_small <= 0.20, row


@pytest.fixture(scope="module")
def h200_scale3(h200x2):
    """The blind rank-scaling check: the 3-rank bench (validation/collectives-3rank-blind_h200x4_2026-11-27, 4x H200 host, 2026-11-27) was
    run after the predictions were committed (validation/collectives-3rank-blind_h200x4_2026-11-27/predictions.json, label main)."""
    return {row.op: row for row in scale_check(h200x2, _rows(VALIDATION / "collectives-3rank-blind_h200x4_2026-11-27" / "bench3.jsonl"), **H200)}


@pytest.mark.parametrize("op", ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all", "send_recv"])
def test_h200_scale_check_2_to_3_at_1_MiB_and_above(h200_scale3, op):
    assert h200_scale3[op].mean_large <= 0.10, h200_scale3[op]


@pytest.mark.parametrize("op", ["all_reduce", pytest.param("all_gather", marks=pytest.mark.xfail(
    strict=True, reason="3-rank all_gather below 1 MiB 20.3%: 11-14 us measured where the 2-rank fit keeps NCCL's "
                        "0.6 us LL hop (2 ranks cannot tell it from the floor); docs/calibration.md")),
    "reduce_scatter", "broadcast", "all_to_all", "send_recv"])
def test_h200_scale_check_2_to_3_below_1_MiB(h200_scale3, op):
    assert h200_scale3[op].mean_small <= 0.20, h200_scale3[op]


def test_p2p_channel_schedule_follows_nccl():
    """NCCL's p2p schedule (enqueue.cc addP2pToPlan) on a 32-channel pool: an op starts on 32 / ranks channels
    and doubles them while a part exceeds 16 MiB; all_to_all serves ranks - 1 peers at once. The 4-rank H200
    send_recv log steps from 161 to 302 GB/s between 128 and 256 MiB, where 8 channels become 16."""
    from clustersim.collectives.ncclchoice import p2p_channels

    mib = 2.0 ** 20
    four = p2p_channels("send_recv", 4, 1, np.array([mib, 4 * mib, 128 * mib, 256 * mib, 512 * mib]), sm=90,
                        intra_line_GBps=450.0)
    assert four.tolist() == [8, 8, 8, 16, 32]
    two = p2p_channels("send_recv", 2, 1, np.array([64 * 1024.0, 256 * mib, 512 * mib]), sm=90, intra_line_GBps=450.0)
    assert two.tolist() == [1, 16, 32]       # 64 KiB: one part of at least 64 KiB
    a2a = p2p_channels("all_to_all", 4, 1, np.array([128 * mib]), sm=90, intra_line_GBps=450.0)
    assert a2a.tolist() == [24]              # 3 peers x 8 channels of the 32
    assert np.isinf(p2p_channels("send_recv", 16, 2, np.array([mib]), sm=90, intra_line_GBps=450.0)).all()
    assert np.isinf(p2p_channels("all_reduce", 4, 1, np.array([mib]), sm=90, intra_line_GBps=450.0)).all()


def test_refine_passes_through_fit_points_and_leaves_other_rank_counts_to_the_model(h200x2, h200x4):
    fit, _ = split_sizes(h200x2, 1)
    model = fit_link_model(fit, **H200)
    t = np.array([r["time_us"] for r in fit])
    np.testing.assert_allclose(refine(model, fit, fit), t, rtol=0.02)   # repeats of one size are averaged
    np.testing.assert_array_equal(refine(model, fit, h200x4), model.predict_us(h200x4))


def _transfer_checks():
    """tools/transfer_checks.py, whose ``synthetic()`` builds and fits the synthetic rows."""
    spec = importlib.util.spec_from_file_location("transfer_checks", ROOT / "tools" / "transfer_checks.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_fit_recovers_synthetic_link_parameters():
    """A known link model away from NCCL's constants, 8 and 16 ranks with 1% noise: the fit recovers it and
    predicts 32 ranks."""
    residual_median, held_out_mean = _transfer_checks().synthetic()
    assert residual_median < 0.02, f"synthetic fit residual median {residual_median:.2%} >= 2%"
    assert held_out_mean < 0.10, f"synthetic 32-rank held-out mean error {held_out_mean:.1%} >= 10%"


def test_band_factor_is_at_least_the_median_error(h200x2, h200x2_size):
    f = band_factor(h200x2, **H200)
    errs = np.abs(h200x2_size["errors"])
    assert 1.0 + np.median(errs) < f < 1.5, f"band factor {f:.3f} outside (1 + median error {np.median(errs):.3f}, 1.5)"


def test_cli_report_transfer_tables_plots_and_json(tmp_path):
    import typer
    from typer.testing import CliRunner

    from clustersim.cli import calibrate_fit

    def make_app() -> typer.Typer:
        root, sub = typer.Typer(), typer.Typer()
        calibrate_fit.register(sub)
        root.add_typer(sub, name="calibrate")
        return root

    files = [str(MEAS / "h200x2" / "bench-graph.jsonl"), str(MEAS / "h200x4" / "bench-graph.jsonl")]
    args = ["calibrate", "report", *files, "-p", "hgx-h200", "--holdout", "none", "--transfer"]
    r = CliRunner().invoke(make_app(), [*args, "-o", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert "size check" in r.stdout and "scale check: fit on ranks 2, predict 4" in r.stdout
    assert "intra.simple" in r.stdout and "own chunk GB/s" in r.stdout
    assert (tmp_path / "transfer_size.png").is_file() and (tmp_path / "transfer_scale.png").is_file()
    doc = json.loads(CliRunner().invoke(make_app(), [*args, "--json"]).stdout)
    size = {row["op"]: row for row in doc["transfer"]["size"]["table"]}
    assert set(size) == {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all", "send_recv"}
    over = {op: row["mean_large_pct"] for op, row in size.items() if row["mean_large_pct"] > 6.0}
    assert not over, f"mean error >= 1 MiB over 6% (op: %): {over}"
    link = doc["link_model"]
    assert set(link["floor_us"]) == set(size) and 0 < link["intra.simple"]["efficiency"] < 1
    bad = CliRunner().invoke(make_app(), [*args, "--fit-ranks", "two"])
    assert bad.exit_code == 2 and "--fit-ranks" in bad.output
