"""The large shipped presets load and build (moved from tests/unit/test_topology_specs.py, which checks
the presets of up to ``LARGE_GPUS`` GPUs the same way): seconds each, Colossus (100,000 GPUs) the most."""

from __future__ import annotations

from pathlib import Path

import pytest

from clustersim.config.base import shipped_dir
from clustersim.config.topology import load_topology_spec
from clustersim.topology import load_cluster

pytestmark = pytest.mark.slow

LARGE_GPUS = 4096  # tests/unit/test_topology_specs.py's bound


def shipped_gpus(path: Path) -> int:
    spec = load_topology_spec(path)
    return (spec.cluster.nodes if spec.cluster else 1) * spec.node.gpus


LARGE_TOPOS = [p for p in sorted(shipped_dir("topology").glob("*.yaml")) if shipped_gpus(p) > LARGE_GPUS]


def test_large_presets_are_shipped():
    assert {p.stem for p in LARGE_TOPOS} >= {"colossus-h100", "gb200-nvl72-superpod"}


@pytest.mark.parametrize("path", LARGE_TOPOS, ids=[p.stem for p in LARGE_TOPOS])
def test_every_large_shipped_topology_loads_and_builds(path: Path):
    spec = load_topology_spec(path)
    assert spec.name == path.stem, "a shipped file's name must equal its bare name"
    assert spec.default_profile
    c = load_cluster(path.stem)
    assert c.n_gpus == shipped_gpus(path) and c.graph.number_of_nodes() > c.n_gpus
    # by path too
    assert load_cluster(str(path)).n_gpus == c.n_gpus
