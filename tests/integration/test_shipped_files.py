"""Every shipped topology, scenario and profile loads and validates."""

from pathlib import Path

import pytest

from clustersim.config.base import load_model, shipped_dir
from clustersim.config.profile import Profile
from clustersim.config.scenario import Scenario

ROOT = Path(__file__).resolve().parents[2]
PROFILES = sorted(p for p in (ROOT / "profiles").glob("*.yaml") if p.name != "inputs.yaml")
SCENARIOS = sorted(p for p in (ROOT / "scenarios").glob("*.yaml") if not p.name.startswith("study-"))  # studies: test_shipped_studies
TOPOLOGIES = sorted((ROOT / "topologies").glob("*.yaml"))


def test_shipped_folders_are_used_in_a_checkout():
    assert shipped_dir("topology") == ROOT / "topologies"
    assert TOPOLOGIES and SCENARIOS and PROFILES


@pytest.mark.parametrize("path", PROFILES, ids=lambda p: p.stem)
def test_profile_validates(path):
    prof = load_model(Profile, path)
    assert prof.name


@pytest.mark.parametrize("path", TOPOLOGIES, ids=lambda p: p.stem)
def test_topology_builds_and_names_an_existing_profile(path):
    from clustersim.topology import load_cluster

    cluster = load_cluster(path)
    assert cluster.n_gpus > 0
    if cluster.default_profile:
        assert (ROOT / "profiles" / f"{cluster.default_profile}.yaml").is_file(), cluster.default_profile


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_scenario_resolves(path):
    from clustersim.simulate.resolve import resolve_scenario

    load_model(Scenario, path)
    r = resolve_scenario(path)
    assert r.cluster.n_gpus >= 1
