"""A scenario from what another tool's file said: the cluster, the parallel degrees and the batch.

Every importer (:mod:`clustersim.importers.hf`, ``megatron``, ``torchtitan``, ``torch_trace``) reads
its file into a ``model:`` (or ``job:``) section and the degrees it names; :func:`build_scenario`
adds the cluster, fills the data-parallel degree from the GPU count (``dp = GPUs / (tp pp cp)``,
as Megatron-LM and torchtitan's ``data_parallel_shard_degree = -1`` do) and validates the result
as ``clustersim run`` would, so that a file the importer writes always runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from clustersim.config.base import validate
from clustersim.config.scenario import Scenario, check_world_size
from clustersim.errors import ClusterSimError


@dataclass
class Imported:
    """A scenario read from another tool's file, and what the reading left out."""

    scenario: dict[str, Any]
    warnings: list[str] = field(default_factory=list)  # keys or arguments not read
    notes: list[str] = field(default_factory=list)  # features read but not modelled
    report: dict[str, Any] = field(default_factory=dict)  # counts worth showing (parameters, layout)

    def to_dict(self) -> dict:
        """The JSON of ``--json``: the scenario, warnings, notes and the report."""
        return {"scenario": self.scenario, "warnings": self.warnings, "notes": self.notes, "report": self.report}

    def yaml(self) -> str:
        """The scenario as the YAML file ``run`` and ``plan`` read, headed by the warnings and notes as comments."""
        head = "".join(f"# warning: {w}\n" for w in self.warnings) + "".join(f"# note: {n}\n" for n in self.notes)
        return head + yaml.safe_dump(self.scenario, sort_keys=False, width=2**16)


def cluster_gpus(topology: str, gpus: int | None, nodes: int | None) -> int:
    """GPUs of the cluster a scenario names (the topology's own count unless ``gpus`` / ``nodes`` say otherwise)."""
    from clustersim.topology.cluster import load_cluster

    try:
        return load_cluster(topology, nodes=nodes, gpus=gpus).n_gpus
    except ClusterSimError as exc:
        raise ClusterSimError(exc.reason, file=exc.file, field=exc.field or "--topology") from None


def cluster_for(topology: str, world: int) -> tuple[int | None, int | None]:
    """``(nodes, gpus)`` of a cluster of ``world`` GPUs on ``topology``: its own nodes when they hold
    them, else as many copies of its node as ``world`` needs (the first ``world`` GPUs of them)."""
    from clustersim.topology.cluster import load_cluster

    own = load_cluster(topology)
    if world <= own.n_gpus:
        return None, (world if world < own.n_gpus else None)
    nodes = -(-world // own.gpus_per_host)
    return nodes, (world if world < nodes * own.gpus_per_host else None)


def build_scenario(name: str, *, model: dict | None = None, job: dict | None = None, topology: str,
                   gpus: int | None = None, nodes: int | None = None, training: dict | None = None,
                   parallelism: dict | None = None, description: str | None = None,
                   source: str | None = None) -> dict[str, Any]:
    """A validated scenario dict (see the module docstring); ``source`` names the input file in errors.

    ``parallelism`` may leave ``dp`` out (or give ``None``): it is then the GPUs over ``tp * pp * cp``.

    Raises
    ------
    ClusterSimError
        The degrees do not divide the GPUs, or the scenario breaks a rule of the schema (named by field).
    """
    n = cluster_gpus(topology, gpus, nodes)
    par = {k: v for k, v in (parallelism or {}).items() if v is not None}
    if model is not None and par.get("dp") is None:
        other = par.get("tp", 1) * par.get("pp", 1) * par.get("cp", 1)
        if n % other:
            raise ClusterSimError(f"tp*pp*cp = {other} does not divide the {n} GPUs of the cluster", file=source,
                                  field="parallelism")
        par["dp"] = n // other
    cluster: dict[str, Any] = {"topology": topology}
    if nodes is not None:
        cluster["nodes"] = nodes
    if gpus is not None:
        cluster["gpus"] = gpus
    data: dict[str, Any] = {"name": name}
    if description:
        data["description"] = description
    data["cluster"] = cluster
    if model is not None:
        data["model"] = model
    if job is not None:
        data["job"] = job
    if training:
        data["training"] = training
    if par:
        data["parallelism"] = par
    check_world_size(validate(Scenario, data, file=source), n, file=source)
    return data


def fit_global_batch(global_batch: int | None, micro_batch: int, dp: int) -> int:
    """The global batch asked for, or one micro-batch per data-parallel rank when none was."""
    return global_batch if global_batch is not None else micro_batch * dp
