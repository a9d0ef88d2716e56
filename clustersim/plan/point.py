"""The sweep's planner hook (``plan: true`` studies): the best mix of one point and its simulated result.

:func:`plan_point` is the entry point the sweep looks up (``clustersim.sweep.point.find_planner``,
Contract 6 of docs/architecture.md). It runs :func:`~clustersim.plan.search.plan` on the point's
already read scenario, topology and profile, takes the best plan and returns the point's inputs
with that plan's parallelism and training fields, and ``run_scenario`` of them: the same numbers
``clustersim run`` gives on the planned scenario (``clustersim plan --write-best`` writes it).

Fidelity follows the point's ``simulation.fidelity``: ``flow`` (the default) ranks analytically
and re-ranks the best ``flow_top`` at flow, as ``clustersim plan`` does; ``analytical`` ranks
analytically only, so an analytical study stays analytical (and fast). The planner runs on one
process: the sweep already spreads its points over the workers, and a pool worker may not fork.
"""

from __future__ import annotations

import dataclasses

from clustersim.errors import ClusterSimError
from clustersim.plan.result import PlanReport
from clustersim.plan.search import PlanOptions, plan
from clustersim.simulate.resolve import ScenarioInputs
from clustersim.simulate.run import RunResult, run_scenario


def point_options(inputs: ScenarioInputs) -> PlanOptions:
    """The planner's defaults for one sweep point: one worker, flow re-ranking only for a flow point."""
    opts = PlanOptions(workers=1)
    if inputs.scenario.simulation.fidelity == "analytical":
        opts.flow_top = 0
    return opts


def _no_plan_error(inputs: ScenarioInputs, rep: PlanReport) -> ClusterSimError:
    """Why no mix survived: the constraints that removed mixes, each with its first example."""
    why = "; ".join(f"{r['constraint']} removed {r['removed']} (e.g. {r['example']}: {r['reason']})"
                    for r in rep.constraints if r["removed"])
    return ClusterSimError(f"no parallel mix of {rep.scenario} fits on {rep.n_gpus} GPUs "
                           f"({rep.evaluated} mixes tried): {why or 'no mix to try'}",
                           file=str(inputs.file) if inputs.file is not None else None, field="plan")


def plan_point(inputs: ScenarioInputs, options: PlanOptions | None = None) -> tuple[ScenarioInputs, RunResult]:
    """The fastest parallel mix of ``inputs`` that fits in memory, and its simulated result.

    Parameters
    ----------
    inputs: a point's validated scenario, topology and profile (its own degrees need not fit the GPUs).
    options: planner options; default :func:`point_options`.

    Returns
    -------
    ``(planned, result)``: ``inputs`` with the best plan's ``parallelism`` and ``training`` fields
    (fidelity kept), and ``run_scenario`` of it. Deterministic: the planner orders plans by
    (step time, mix label), so equal step times keep one order.

    Raises
    ------
    ClusterSimError: the scenario has no ``model:`` section, or no mix fits (the reason names the
        constraints that removed the mixes).
    """
    opts = options or point_options(inputs)
    rep = plan(inputs, options=opts)
    if not rep.plans:
        raise _no_plan_error(inputs, rep)
    ev = rep.evaluator
    scenario = ev.scenario_for(rep.plans[0].mix, fidelity=inputs.scenario.simulation.fidelity)
    planned = dataclasses.replace(inputs, scenario=scenario)
    # a fresh run (no shared collective memo): exactly what `clustersim run` computes for the planned file
    return planned, run_scenario(ev.resolved(scenario))
