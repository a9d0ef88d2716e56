"""The H200's measured collective model carried to an H100 it never saw (issue 13: a fit predicts other hardware).

``hgx-h200``'s profile (entries measured on 2 and 4 H200, link model) on the ``dgx-h100`` topology (the
same 18 NVLink4 per GPU, so the same line rates) predicts the 2x H100 bench of 2026-11-27
(``profiles/measurements/h100x2/bench-graph.jsonl``, a copy of ``profiles/measurements/h100x2``): the blind predictions
committed before that bench (``validation/collectives-h100-blind_h100x2-h100x4_2026-11-27/h100x2/predictions.json``) gave, at NCCL level (less the
kernel gap ``clustersim collective`` adds for a back-to-back call), 1.2-6.7% mean at >= 1 MiB and 1.8-7.3%
below for the six ops; this test holds today's model to it.

The 4-rank bench of 2026-11-27 (``validation/collectives-h100-blind_h100x2-h100x4_2026-11-27/h100x4``) is the other transfer: the H100's own link model,
fitted on its 2 ranks, predicting 4 (issue 13's scale check, on a GPU the fitter was not written for).
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import numpy as np
import pytest

from clustersim.calibration.fit import read_measurements
from clustersim.collectives import CollectiveModel

MEAS = Path(__file__).resolve().parents[2] / "profiles" / "measurements"
#: the H100 collective study: its blind predictions and the 4-rank bench held out of every profile
STUDY = Path(__file__).resolve().parents[2] / "validation" / "collectives-h100-blind_h100x2-h100x4_2026-11-27"
BENCH = {"h100x2": MEAS / "h100x2" / "bench-graph.jsonl", "h100x4": STUDY / "h100x4" / "bench-graph.jsonl"}
ROOT = Path(__file__).resolve().parents[2]
MIB = 2 ** 20
# moved from tests/unit with test_fit_transfer.py: a fit of real logs and 138 predictions of measured rows
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def h100_rows():
    rows = read_measurements([str(BENCH["h100x2"])]).rows
    return [r for r in rows if r["kind"] == "collective" and r.get("mode") == "nccl" and not r.get("nvls")
            and r.get("algorithm") is None and r.get("protocol") is None and r.get("ranks") == 2]


@pytest.fixture(scope="module")
def h200_model_on_h100(shared_cluster, shared_profile):
    return CollectiveModel(shared_cluster("dgx-h100", gpus=2), shared_profile("hgx-h200"), nvls=False)


@pytest.mark.parametrize("op", ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all", "send_recv"])
def test_h200_profile_predicts_h100_collectives(op, h100_rows, h200_model_on_h100):
    rows = [r for r in h100_rows if r["op"] == op]
    assert len({r["size_bytes"] for r in rows}) == 23          # 1 KiB - 4 GiB
    err = {}
    for r in rows:
        # the bench's nccl rows are CUDA-graph replays: NCCL-level time, without the kernel gap the
        # model adds for a back-to-back call
        pred = (h200_model_on_h100.estimate(op, 2, r["size_bytes"]).time_s - h200_model_on_h100.launch_s) * 1e6
        err.setdefault(r["size_bytes"], []).append(abs(pred / r["time_us"] - 1))
    big = [statistics.fmean(v) for s, v in err.items() if s >= MIB]
    small = [statistics.fmean(v) for s, v in err.items() if s < MIB]
    assert np.mean(big) <= 0.07 and np.mean(small) <= 0.10, \
        f"{op} on 2 H100 from the H200 profile: mean error {np.mean(big):.1%} at >= 1 MiB (bar 7%), " \
        f"{np.mean(small):.1%} below (bar 10%)"


def test_blind_predictions_were_committed_before_the_bench():
    pred = json.loads((STUDY / "h100x2" / "predictions.json").read_text())
    bench_run = next(json.loads(line)["run_id"] for line in BENCH["h100x2"].open()
                     if '"run_id"' in line)
    # run ids are UTC start times (YYYYMMDDTHHMMSSZ-...): the predictions are older than the bench
    assert pred["_meta"]["predicted_at"].replace("-", "").replace(":", "")[:15] < bench_run[:15]
    assert set(pred) == {"own profile", "profile hgx-h200", "_meta"}


@pytest.fixture(scope="module")
def h100_scale_check():
    """The scale check's rows by op: one fit on the 2x H100 bench, predicting the 4x H100 bench (every op's
    row of the same ``scale_check`` call, made once for the module)."""
    from clustersim.calibration.fit.transfer import scale_check

    def rows(name):
        got = read_measurements([str(BENCH[name])]).rows
        return [r for r in got if r["kind"] == "collective" and r.get("mode") == "nccl" and not r.get("nvls")
                and r.get("algorithm") is None and r.get("protocol") is None]

    return {r.op: r for r in scale_check(rows("h100x2"), rows("h100x4"), intra_line_GBps=450.0, sm=90)}


@pytest.mark.parametrize("op", ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all", "send_recv"])
def test_h100_link_model_from_2_ranks_predicts_4(op, h100_scale_check):
    """Fitted on the 2x H100 bench, predicting the 4x H100 bench (both 2026-11-27): issue 13's bar (10% mean
    at >= 1 MiB, 20% below). Blind, before the fitter held unidentified per-step latencies at NCCL's: all_reduce
    12.7% and broadcast 9.6% (``validation/collectives-h100-blind_h100x2-h100x4_2026-11-27/h100x4/predictions.json``)."""
    row = h100_scale_check[op]
    assert row.mean_large <= 0.10 and row.mean_small <= 0.20, row
