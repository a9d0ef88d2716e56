"""Planner (``clustersim plan``): search the parallel configurations of a scenario's model, batch and cluster.

Modules: :mod:`~clustersim.plan.space` (the mixes), :mod:`~clustersim.plan.constraints` (why a mix
is dropped), :mod:`~clustersim.plan.bound` (memory and a step-time lower bound without a DAG),
:mod:`~clustersim.plan.evaluate` (a mix through the simulator's own model),
:mod:`~clustersim.plan.search` (branch and bound, flow re-ranking), :mod:`~clustersim.plan.result`
(plans and the JSON document), :mod:`~clustersim.plan.write` (``--write-best``),
:mod:`~clustersim.plan.point` (``plan_point``, the hook of ``plan: true`` studies).
"""

from clustersim.plan.point import plan_point
from clustersim.plan.result import Plan, PlanReport
from clustersim.plan.search import PlanOptions, plan, why_dropped
from clustersim.plan.space import Mix, SpaceOptions

__all__ = ["Mix", "Plan", "PlanOptions", "PlanReport", "SpaceOptions", "plan", "plan_point", "why_dropped"]
