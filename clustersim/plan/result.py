"""What the planner hands back: ranked plans, constraint tallies and the ``--json`` document."""

from __future__ import annotations

from dataclasses import dataclass, field

from clustersim.plan.space import Mix


@dataclass
class Plan:
    """One simulated mix: its configuration and what the simulator predicts for it.

    ``step_time_s``, ``mfu``, ``tokens_per_s`` come from ``fidelity`` (``flow`` for the re-ranked
    top, else ``analytical``); ``analytical_step_time_s`` is kept for every plan.
    """

    mix: Mix
    step_time_s: float
    mfu: float | None
    tokens_per_s: float | None
    peak_bytes_per_gpu: float
    fits: bool
    fidelity: str
    analytical_step_time_s: float
    bound_s: float
    breakdown: dict = field(default_factory=dict)
    placement: str = ""
    #: the run's evidence, as :func:`clustersim.plan.distinguish.plan_evidence` keeps it (step classes, band,
    #: the entry that moves the step most)
    evidence: dict = field(default_factory=dict)
    #: False where this plan's band overlaps the best plan's (:func:`clustersim.plan.distinguish.mark_distinguishable`)
    distinguishable: bool = True
    #: the one input that alone could swap this plan and the best, within its held-out error (None: none can)
    could_swap: str | None = None

    @property
    def band_s(self) -> tuple[float, float]:
        """(fast, slow) step time of the plan's evidence band."""
        h = self.evidence.get("half_width", 0.0)
        return self.step_time_s / (1 + h), self.step_time_s * (1 + h)
    #: labels of the other mixes whose simulated run is this one (same DAG: same step time and
    #: breakdown; their memory may differ, this plan's is the least)
    same_run: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        """JSON row: the mix's fields, then the predictions."""
        return {**self.mix.as_dict(), "step_time_s": self.step_time_s, "mfu": self.mfu,
                "tokens_per_s": self.tokens_per_s, "peak_bytes_per_gpu": self.peak_bytes_per_gpu,
                "fits": self.fits, "fidelity": self.fidelity,
                "analytical_step_time_s": self.analytical_step_time_s, "lower_bound_s": self.bound_s,
                "breakdown": dict(self.breakdown), "placement": self.placement,
                "band_s": list(self.band_s), "evidence": dict(self.evidence),
                "distinguishable_from_best": self.distinguishable, "could_swap_with_best": self.could_swap,
                "same_run": list(self.same_run)}


@dataclass
class PlanReport:
    """Everything one planning run found.

    ``evaluated``: mixes enumerated and judged; ``feasible``: those passing every constraint;
    ``simulated``: feasible mixes run through the analytical simulator; ``pruned_by_bound``:
    feasible mixes skipped because their step-time lower bound could not beat the kept plans.
    ``plans`` holds every simulated run, best first: mixes with one run are one plan (its
    ``same_run`` names the others), so no two plans are the same run.
    """

    scenario: str
    n_gpus: int
    evaluated: int
    feasible: int
    simulated: int
    pruned_by_bound: int
    flow_reranked: int
    wall_s: float
    constraints: list[dict]
    plans: list[Plan]
    timings: dict = field(default_factory=dict)
    #: the :class:`~clustersim.plan.evaluate.Evaluator` that built the mixes (for ``--write-best``)
    evaluator: object = field(default=None, repr=False, compare=False)

    def to_dict(self, top: int | None = None) -> dict:
        """The ``--json`` document (``top``: how many plans to list; default all simulated)."""
        plans = self.plans if top is None else self.plans[:top]
        return {"scenario": self.scenario, "n_gpus": self.n_gpus, "evaluated": self.evaluated,
                "feasible": self.feasible, "simulated": self.simulated, "pruned_by_bound": self.pruned_by_bound,
                "flow_reranked": self.flow_reranked, "wall_s": self.wall_s, "timings_s": dict(self.timings),
                "constraints": self.constraints, "plans": [p.to_dict() for p in plans]}

    def rank_of(self, step_time_s: float) -> int:
        """1-based rank a mix of analytical step time ``step_time_s`` has among the simulated plans."""
        return 1 + sum(1 for p in self.plans if p.analytical_step_time_s < step_time_s)
