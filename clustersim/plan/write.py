"""``--write-best``: a plan as a scenario file that ``clustersim run`` reproduces exactly."""

from __future__ import annotations

from pathlib import Path

import yaml

from clustersim.files import write_output
from clustersim.plan.evaluate import Evaluator
from clustersim.plan.result import Plan


def _portable(name: str | None, resolved: Path | None) -> str | None:
    """Keep a shipped name (no folder, no suffix); a file path becomes absolute so the file runs from anywhere."""
    if name is None:
        return None
    if "/" not in name and not name.endswith((".yaml", ".yml")):
        return name
    return str(resolved.resolve()) if resolved is not None else name


def plan_scenario_dict(ev: Evaluator, plan: Plan) -> dict:
    """The scenario document of ``plan`` (its fidelity is the one its step time came from)."""
    sc = ev.scenario_for(plan.mix, fidelity=plan.fidelity)
    d = sc.model_dump(mode="json", exclude_none=True)
    c = d["cluster"]
    c["topology"] = _portable(sc.cluster.topology, ev.rs.topology_file)
    if sc.cluster.profile is not None:
        c["profile"] = _portable(sc.cluster.profile, ev.rs.profile_file)
    d["name"] = f"{sc.name}-plan"
    d["description"] = (f"clustersim plan of {sc.name}: {plan.mix.label()}; predicted {plan.step_time_s:.6g} s "
                        f"per step ({plan.fidelity}), {plan.peak_bytes_per_gpu / 2**30:.2f} GiB per GPU")
    return d


def write_best(path: str | Path, ev: Evaluator, plan: Plan) -> Path:
    """Write ``plan`` as a scenario YAML file; returns the path."""
    path = Path(path)
    text = yaml.safe_dump(plan_scenario_dict(ev, plan), sort_keys=False)
    return write_output(path, f"# written by clustersim plan --write-best\n{text}")
