"""The H200's measured collective model carried to an H100 it never saw (issue 13: a fit predicts other hardware).

``hgx-h200``'s profile (entries measured on 2 and 4 H200, link model) on the ``dgx-h100`` topology (the
same 18 NVLink4 per GPU, so the same line rates) predicts the 2x H100 bench of 2026-11-27
(``tests/data/h100x2/bench-graph.jsonl``, a copy of ``calibrate/raw/h100x2``): the blind predictions
committed before that bench (``calibrate/raw/blind-h100x2/predictions.json``) gave 1.9-5.3% mean at
>= 1 MiB and 6-20% below for the six ops; this test holds today's model to it.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import numpy as np
import pytest

from clustersim.calibration.fit import read_measurements
from clustersim.collectives import CollectiveModel
from clustersim.collectives.profiles import resolve_profile
from clustersim.topology import load_cluster

DATA = Path(__file__).resolve().parents[1] / "data"
ROOT = Path(__file__).resolve().parents[2]
MIB = 2 ** 20


@pytest.fixture(scope="module")
def h100_rows():
    rows = read_measurements([str(DATA / "h100x2" / "bench-graph.jsonl")]).rows
    return [r for r in rows if r["kind"] == "collective" and r.get("mode") == "nccl" and not r.get("nvls")
            and r.get("algorithm") is None and r.get("protocol") is None and r.get("ranks") == 2]


@pytest.fixture(scope="module")
def h200_model_on_h100():
    return CollectiveModel(load_cluster("dgx-h100", gpus=2), resolve_profile("hgx-h200"), nvls=False)


@pytest.mark.parametrize("op", ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all", "send_recv"])
def test_h200_profile_predicts_h100_collectives(op, h100_rows, h200_model_on_h100):
    rows = [r for r in h100_rows if r["op"] == op]
    assert len({r["size_bytes"] for r in rows}) == 23          # 1 KiB - 4 GiB
    err = {}
    for r in rows:
        pred = h200_model_on_h100.estimate(op, 2, r["size_bytes"]).time_s * 1e6
        err.setdefault(r["size_bytes"], []).append(abs(pred / r["time_us"] - 1))
    big = [statistics.fmean(v) for s, v in err.items() if s >= MIB]
    small = [statistics.fmean(v) for s, v in err.items() if s < MIB]
    assert np.mean(big) <= 0.06 and np.mean(small) <= 0.20, (op, np.mean(big), np.mean(small))


def test_blind_predictions_were_committed_before_the_bench():
    pred = json.loads((ROOT / "calibrate" / "raw" / "blind-h100x2" / "predictions.json").read_text())
    bench_run = next(json.loads(line)["run_id"] for line in (DATA / "h100x2" / "bench-graph.jsonl").open()
                     if '"run_id"' in line)
    # run ids are UTC start times (YYYYMMDDTHHMMSSZ-...): the predictions are older than the bench
    assert pred["_meta"]["predicted_at"].replace("-", "").replace(":", "")[:15] < bench_run[:15]
    assert set(pred) == {"own profile", "profile hgx-h200", "_meta"}
