"""Resolve a scenario file: load it, find its topology and profile, build the cluster, check the rules.

Two steps, so that a sweep can do the first on its controller and ship plain data to a worker:
:func:`read_inputs` reads and validates the three files (``--set`` overrides applied, including
``topology.*`` and ``profile.*`` ones that change the scenario's topology or profile file),
:func:`build_resolved` builds the cluster from them. :func:`resolve_scenario` does both.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path

from clustersim.config.base import apply_overrides, load_model, load_yaml, resolve_file, validate
from clustersim.config.profile import Profile
from clustersim.config.scenario import Scenario, check_work, check_world_size
from clustersim.config.topology import TopologySpec
from clustersim.errors import ClusterSimError
from clustersim.workload.moe import check_ep_max_nodes

# --set prefixes that change the scenario's topology or profile file instead of the scenario
FILE_PREFIXES = ("topology", "profile")


@dataclass
class ResolvedScenario:
    """A validated scenario with its cluster and profile."""

    scenario: Scenario
    file: Path | None
    cluster: "object"
    profile: Profile
    topology_file: Path
    profile_file: Path | None
    host_factor: float = 1.0
    """every op's host issue time is multiplied by it (1: the profile's host; the bounds of the host speed band,
    :mod:`clustersim.simulate.band`)"""


@dataclass
class ScenarioInputs:
    """A scenario and the validated contents of its topology and profile files, nothing built yet.

    Plain picklable data: a sweep reads it once per point on its controller and a worker (another
    process or machine, without the files) builds the cluster from it.
    """

    scenario: Scenario
    file: Path | None
    topology: TopologySpec
    topology_file: Path
    profile: Profile
    profile_file: Path | None


def split_overrides(overrides: list[str] | None) -> dict[str, list[str]]:
    """Sort ``--set`` items by the file they change.

    ``topology.<path>=v`` changes the scenario's topology file (after ``extends`` is merged),
    ``profile.<path>=v`` its profile; every other item changes the scenario.

    >>> split_overrides(["parallelism.dp=2", "topology.node.nic_speed_Gbps=800", "profile.links.network.latency_us=5"])
    {'scenario': ['parallelism.dp=2'], 'topology': ['node.nic_speed_Gbps=800'], 'profile': ['links.network.latency_us=5']}
    """
    out: dict[str, list[str]] = {"scenario": [], "topology": [], "profile": []}
    for item in overrides or []:
        head, _, rest = item.partition(".")
        if head in FILE_PREFIXES and rest and "=" in rest and "=" not in head:
            out[head].append(rest)
        else:
            out["scenario"].append(item)
    return out


def load_profile(name: str | Path | None, base: Path | None = None) -> tuple[Profile, Path | None]:
    """Load a profile by path or shipped name; ``None`` gives an empty default profile."""
    if name is None:
        return Profile(name="builtin-defaults", description="No profile: NCCL model constants and spec sheets."), None
    path = resolve_file(name, "profile", base=base)
    return load_model(Profile, path), path


def _topology(name: str, base: Path | None, overrides: list[str], cache: dict | None):
    from clustersim.config.topology import TopologySpec, load_topology_data, load_topology_spec

    path = resolve_file(name, "topology", base=base)
    key = ("topology", str(path.resolve()), tuple(overrides))
    if cache is not None and key in cache:
        return cache[key], path
    if overrides:
        data = apply_overrides(copy.deepcopy(load_topology_data(path)), overrides, file=str(path))
        spec = validate(TopologySpec, data, file=str(path))
    else:
        spec = load_topology_spec(path)
    if cache is not None:
        cache[key] = spec
    return spec, path


def _profile(name: str | None, base: Path | None, overrides: list[str], cache: dict | None):
    path = resolve_file(name, "profile", base=base) if name is not None else None
    key = ("profile", str(path.resolve()) if path else None, tuple(overrides))
    if cache is not None and key in cache:
        return cache[key], path
    if not overrides:
        prof, path = load_profile(path, base=base)
    else:
        data = load_yaml(path) if path is not None else load_profile(None)[0].model_dump(mode="json")
        apply_overrides(data, overrides, file=str(path) if path else None)
        prof = validate(Profile, data, file=str(path) if path else None)
    if cache is not None:
        cache[key] = prof
    return prof, path


def read_inputs(source: str | Path | Scenario, overrides: list[str] | None = None,
                cache: dict | None = None) -> ScenarioInputs:
    """Read and validate a scenario (path or model) and its topology and profile files.

    Parameters
    ----------
    source: scenario file or :class:`Scenario` (relative file names then resolve against the cwd).
    overrides: ``--set`` items; ``topology.*`` and ``profile.*`` ones change those files (:func:`split_overrides`).
    cache: a dict the caller owns: topology and profile files read once per distinct set of overrides.
    """
    parts = split_overrides(overrides)
    if isinstance(source, Scenario):
        if parts["scenario"]:
            raise ClusterSimError("scenario overrides need a scenario file, not a Scenario object")
        scenario, file, base = source, None, None
    else:
        file = Path(source)
        scenario = load_model(Scenario, file, parts["scenario"])
        base = file.resolve().parent
    fname = str(file) if file is not None else None
    c = scenario.cluster
    try:
        topo, topo_file = _topology(c.topology, base, parts["topology"], cache)
    except ClusterSimError as exc:
        raise ClusterSimError(exc.message, file=fname, field="cluster.topology") from None
    prof_name = c.profile if c.profile is not None else topo.default_profile
    try:
        profile, prof_file = _profile(prof_name, base, parts["profile"], cache)
    except ClusterSimError as exc:
        raise ClusterSimError(exc.message, file=fname, field="cluster.profile") from None
    return ScenarioInputs(scenario, file, topo, topo_file, profile, prof_file)


def build_resolved(inputs: ScenarioInputs, check_world: bool = True) -> ResolvedScenario:
    """Build the cluster of :class:`ScenarioInputs` and check the rule that needs its GPU count
    (``check_world=False``: not that rule; the planner replaces the degrees with its own)."""
    from clustersim.topology.cluster import Cluster

    fname = str(inputs.file) if inputs.file is not None else None
    c = inputs.scenario.cluster
    try:
        try:
            cluster = Cluster(inputs.topology, nodes=c.nodes, gpus=c.gpus, gpus_per_node=c.gpus_per_node)
        except ClusterSimError as exc:
            raise exc.with_file(str(inputs.topology_file)) from None
    except ClusterSimError as exc:
        raise ClusterSimError(exc.message, file=fname, field="cluster.topology") from None
    if check_world:
        check_world_size(inputs.scenario, cluster.n_gpus, file=fname)
        check_work(inputs.scenario, cluster.n_gpus, file=fname)  # before any workload is built
        check_ep_max_nodes(inputs.scenario, cluster.host_of, file=fname)
    return ResolvedScenario(inputs.scenario, inputs.file, cluster, inputs.profile, inputs.topology_file,
                            inputs.profile_file)


def resolve_scenario(source: str | Path | Scenario, overrides: list[str] | None = None,
                     check_world: bool = True) -> ResolvedScenario:
    """Load and check a scenario (path or model) and build its cluster and profile.

    ``overrides`` are ``--set`` items; ``topology.<path>=v`` and ``profile.<path>=v`` change the
    scenario's topology and profile files (a what-if on the hardware or the calibration).
    ``check_world=False`` skips the rule that the degrees multiply to the GPU count (the planner).
    """
    return build_resolved(read_inputs(source, overrides), check_world=check_world)
