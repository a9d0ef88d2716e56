"""Sweeps on a real Dask cluster (distributed.LocalCluster) give the same tables as a serial run."""

from __future__ import annotations

from pathlib import Path

import pytest

distributed = pytest.importorskip("distributed")

from clustersim.sweep.runner import run_study  # noqa: E402

STUDY = """\
name: pi-dask
scenario: montecarlo-pi
set: {simulation.fidelity: analytical}
axes:
  - grid: {cluster.gpus: [1, 2, 4, 8]}
"""


def test_dask_local_cluster_matches_serial(tmp_path: Path):
    study = tmp_path / "study.yaml"
    study.write_text(STUDY)
    serial = run_study(study, tmp_path / "serial", executor="serial")
    # a real scheduler and worker, in this process (threads): small, and the same code path as a remote cluster
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as cl:
        res = run_study(study, tmp_path / "dask", executor="dask", address=cl.scheduler_address)
    assert res.evaluated == 4 and not res.failed
    for name in ("results.csv", "results.parquet"):
        assert (tmp_path / "dask" / name).read_bytes() == (tmp_path / "serial" / name).read_bytes(), name
    assert [r["step_time_s"] for r in res.rows] == [r["step_time_s"] for r in serial.rows]


def test_dask_without_address_starts_its_own_cluster(tmp_path: Path):
    study = tmp_path / "study.yaml"
    study.write_text(STUDY)
    run_study(study, tmp_path / "serial", executor="serial")
    res = run_study(study, tmp_path / "dask", executor="dask", max_jobs=1)  # a LocalCluster of 1 worker process
    assert res.evaluated == 4
    assert (tmp_path / "dask" / "results.csv").read_bytes() == (tmp_path / "serial" / "results.csv").read_bytes()
