"""``calibrate fit --topology`` fits the link model on the 2x H200 bench (moved from tests/unit/test_fit.py): three fits
of every NCCL-level row."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from clustersim.cli import calibrate_fit
from clustersim.config.base import load_model
from clustersim.config.profile import Profile

pytestmark = pytest.mark.slow

BENCH = Path(__file__).resolve().parents[2] / "profiles" / "measurements" / "h200x2" / "bench-graph.jsonl"


def make_app() -> typer.Typer:
    root = typer.Typer()
    sub = typer.Typer()
    calibrate_fit.register(sub)
    root.add_typer(sub, name="calibrate")
    return root


def run_cli(*args: str):
    return CliRunner().invoke(make_app(), list(args))


def test_cli_fit_with_topology_writes_the_link_model(tmp_path, shared_cluster):
    """`calibrate fit --topology` also fits the link model on the NCCL-level rows at that topology's line
    rates and writes the section the simulator uses; ``--holdout`` leaves those sizes out of it too."""
    src = BENCH
    out = tmp_path / "p.yaml"
    r = run_cli("calibrate", "fit", str(src), "-o", str(out), "--topology", "hgx-h200")
    assert r.exit_code == 0, r.output
    p = load_model(Profile, out)
    lm = p.link_model
    assert lm is not None and set(lm.links) == {"nvlink"}
    assert lm.provenance.line_rates_GBps == {"nvlink": 450.0} and lm.provenance.ranks == [2]
    assert "--topology hgx-h200" in lm.provenance.method
    assert "link model: nvlink" in r.output
    # the simulator answers from it where no entry was measured (8 ranks), and moves with the line rate
    from clustersim.collectives.model import CollectiveModel

    est = CollectiveModel(shared_cluster("hgx-h200", gpus=8), p).estimate("all_gather", 8, 2**28)
    assert est.source == "link_model"
    half = run_cli("calibrate", "fit", str(src), "-o", str(tmp_path / "h.yaml"), "--topology", "hgx-h200",
                   "--holdout", "odd")
    assert half.exit_code == 0, half.output
    assert load_model(Profile, tmp_path / "h.yaml").link_model.provenance.rows < lm.provenance.rows
    # without a topology (--topology, the meta row or the base profile) there are no line rates to learn
    # efficiencies of: refused, naming --topology (clustersim.calibration.fit.defaults)
    bare = run_cli("calibrate", "fit", str(src), "-o", str(tmp_path / "n.yaml"))
    assert bare.exit_code == 2 and "--topology" in bare.output and not (tmp_path / "n.yaml").exists()
