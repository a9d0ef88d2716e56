"""Resolve a scenario file: load it, find its topology and profile, build the cluster, check the rules."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from clustersim.config.base import load_model, resolve_file
from clustersim.config.profile import Profile
from clustersim.config.scenario import Scenario, check_work, check_world_size
from clustersim.errors import ClusterSimError


@dataclass
class ResolvedScenario:
    """A validated scenario with its cluster and profile."""

    scenario: Scenario
    file: Path | None
    cluster: "object"
    profile: Profile
    topology_file: Path
    profile_file: Path | None


def load_profile(name: str | Path | None, base: Path | None = None) -> tuple[Profile, Path | None]:
    """Load a profile by path or shipped name; ``None`` gives an empty default profile."""
    if name is None:
        return Profile(name="builtin-defaults", description="No profile: NCCL model constants and spec sheets."), None
    path = resolve_file(name, "profile", base=base)
    return load_model(Profile, path), path


def resolve_scenario(source: str | Path | Scenario, overrides: list[str] | None = None) -> ResolvedScenario:
    """Load and check a scenario (path or model) and build its cluster and profile."""
    from clustersim.topology import load_cluster

    if isinstance(source, Scenario):
        scenario, file, base = source, None, None
    else:
        file = Path(source)
        scenario = load_model(Scenario, file, overrides)
        base = file.resolve().parent
    fname = str(file) if file is not None else None
    c = scenario.cluster
    try:
        topo_file = resolve_file(c.topology, "topology", base=base)
        cluster = load_cluster(topo_file, nodes=c.nodes, gpus=c.gpus)
    except ClusterSimError as exc:
        raise ClusterSimError(exc.message, file=fname, field="cluster.topology") from None
    prof_name = c.profile if c.profile is not None else getattr(cluster, "default_profile", None)
    try:
        profile, prof_file = load_profile(prof_name, base=base)
    except ClusterSimError as exc:
        raise ClusterSimError(exc.message, file=fname, field="cluster.profile") from None
    check_world_size(scenario, cluster.n_gpus, file=fname)
    check_work(scenario, cluster.n_gpus, file=fname)  # before any workload is built
    return ResolvedScenario(scenario, file, cluster, profile, topo_file, prof_file)
