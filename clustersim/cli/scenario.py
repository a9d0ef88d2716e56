"""``clustersim validate`` and ``clustersim schema``."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from clustersim.cli.common import budget, max_events_option, max_memory_option, print_json
from clustersim.errors import ClusterSimError


def register(root: typer.Typer) -> None:
    """Attach ``validate`` and ``schema`` to the root app."""

    @root.command("validate")
    def validate_cmd(
        scenario: Path = typer.Argument(..., help="Scenario YAML file."),
        set_: Optional[list[str]] = typer.Option(None, "--set", help="Override a field: --set parallelism.tp=2 (repeatable)."),
        as_json: bool = typer.Option(False, "--json", help="Print the resolved scenario as one JSON document."),
        max_memory: Optional[str] = max_memory_option(),
        max_events: Optional[int] = max_events_option(),
    ) -> None:
        """Validate a scenario and print it with every default filled in.

        Examples:

          clustersim validate scenarios/gpt-1b-ddp.yaml

          clustersim validate scenarios/gpt-1b-ddp.yaml --set parallelism.dp=1 --set cluster.gpus=1 --json
        """
        from clustersim.simulate.resolve import resolve_scenario

        with budget(max_memory, max_events):
            resolved = resolve_scenario(scenario, overrides=set_ or [])
        data = resolved.scenario.model_dump(mode="json")
        data["_resolved"] = {"topology_file": str(resolved.topology_file), "profile_file": str(resolved.profile_file),
                             "gpus": resolved.cluster.n_gpus, "nodes": resolved.cluster.n_hosts}
        if as_json:
            print_json(data)
        else:
            import sys

            import yaml

            # plain stdout, not rich: rich wraps long lines at the terminal width, which breaks the YAML
            sys.stdout.write(f"# valid: {str(scenario).replace(chr(10), ' ')}\n" + yaml.safe_dump(data, sort_keys=False, width=2**16))

    @root.command("schema")
    def schema_cmd(kind: str = typer.Argument("scenario", help="scenario | topology | profile | study")) -> None:
        """Print the JSON Schema of a file kind.

        Examples:

          clustersim schema scenario > scenario.schema.json

          clustersim schema profile

          clustersim schema study
        """
        if kind == "scenario":
            from clustersim.config.scenario import Scenario as M
        elif kind == "topology":
            from clustersim.config.topology import TopologySpec as M
        elif kind == "profile":
            from clustersim.config.profile import Profile as M
        elif kind == "study":
            from clustersim.sweep.study import Study as M
        else:
            raise ClusterSimError(f"unknown schema kind {kind!r} (use scenario, topology, profile or study)")
        print_json(M.model_json_schema())

