"""Evaluate one mix with the simulator's own model: its scenario, memory, step-time lower bound, step time.

One source per fact: a mix becomes a real :class:`~clustersim.config.scenario.Scenario` (the
base scenario with its ``parallelism`` and ``training`` fields replaced, validated by the same
rules as a file), its memory is :meth:`TransformerStep.memory` and its step time is
:func:`clustersim.simulate.run.run_scenario` on the already resolved cluster and profile.
So ``clustersim run`` on a written plan reproduces its step time and memory exactly.

What does not change between mixes is done once per :class:`Evaluator`: the scenario file is
loaded, the topology built and the profile read once (``resolve_scenario`` costs ~0.8 s for
1,024 GPUs), the closed-form collective times are memoised across mixes in one
:class:`~clustersim.simulate.execute.CommCache` (same cluster, profile and switches), and a DAG
already executed is not executed again (:class:`~clustersim.simulate.memo.StepMemo`).
"""

from __future__ import annotations

from dataclasses import dataclass

from clustersim.config.scenario import Scenario
from clustersim.errors import ClusterSimError
from clustersim.plan.space import Mix
from clustersim.simulate.memo import StepMemo
from clustersim.simulate.resolve import ResolvedScenario, ScenarioInputs, build_resolved, resolve_scenario
from clustersim.simulate.run import RunResult, comm_cache_for, run_scenario


@dataclass
class Screen:
    """What the cheap screen of a mix found: its memory and a lower bound on its step time."""

    memory: dict
    bound_s: float


class Evaluator:
    """Builds and judges the mixes of one scenario file (cluster and profile resolved once).

    Parameters
    ----------
    source: scenario file, :class:`Scenario`, already read :class:`ScenarioInputs` (a sweep's
        point) or :class:`ResolvedScenario`, whose model, batch and cluster are planned.
    overrides: ``--set`` style overrides applied to the file first (file sources only).
    """

    def __init__(self, source, overrides: list[str] | None = None):  # noqa: D107
        if isinstance(source, (ScenarioInputs, ResolvedScenario)) and overrides:
            raise ClusterSimError("planner overrides need a scenario file, not already read inputs")
        # the file's own degrees need not fit the GPUs being planned (--gpus): each mix sets its own
        if isinstance(source, ResolvedScenario):
            rs = source
        elif isinstance(source, ScenarioInputs):
            rs = build_resolved(source, check_world=False)
        else:
            rs = resolve_scenario(source, overrides, check_world=False)
        if rs.scenario.model is None:
            raise ClusterSimError("the planner needs a scenario with a model: section (a transformer)",
                                  file=str(rs.file) if rs.file else None, field="model")
        self.rs = rs
        self.base = rs.scenario
        self._base_dump = rs.scenario.model_dump()
        from clustersim.plan.bound import UnitCache

        self.units = UnitCache()  # per-layer kernel costs keyed by (tp, micro_batch, sp, recompute)
        self.comm = None  # the shared CommCache (comm_cache_for), made by the first simulation
        #: executed DAGs by digest: mixes with the same DAG (ZeRO-1/2, selective recompute under
        #: flash attention) are executed once (one per fidelity, see clustersim.simulate.memo)
        self.memo = StepMemo()
        #: the screen may drop a memory group's later mixes once one does not fit (PlanOptions.memory_monotone)
        self.memory_monotone = False
        self._spans: dict[tuple, int] = {}  # EP degrees -> nodes an EP group spans (_ep_nodes)

    @property
    def n_gpus(self) -> int:
        """GPUs of the resolved cluster."""
        return self.rs.cluster.n_gpus

    @property
    def gpus_per_node(self) -> int:
        """GPUs sharing one host (the NVLink domain of the shipped NVSwitch nodes)."""
        return int(getattr(self.rs.cluster, "ranks_per_host", self.rs.cluster.gpus_per_host))

    def scenario_for(self, mix: Mix, fidelity: str = "analytical") -> Scenario:
        """The validated scenario of ``mix`` (raises ``ValueError``/``ClusterSimError`` when invalid)."""
        d = {k: (dict(v) if isinstance(v, dict) else v) for k, v in self._base_dump.items()}
        par = dict(d["parallelism"])
        par.update(dp=mix.dp, tp=mix.tp, pp=mix.pp, virtual_stages=mix.virtual_stages, ep=mix.ep, cp=mix.cp,
                   sequence_parallel=mix.sequence_parallel, zero=mix.zero, schedule=mix.schedule)
        if not mix.sequence_parallel:
            par["tp_comm_overlap"] = False  # Megatron's overlap needs sequence parallel
        tr = dict(d["training"])
        tr.update(micro_batch=mix.micro_batch, recompute=mix.recompute)
        d.update(parallelism=par, training=tr, simulation={**d["simulation"], "fidelity": fidelity})
        sc = Scenario.model_validate(d)
        limit = sc.parallelism.ep_max_nodes
        if limit is not None and (spanned := self._ep_nodes(sc)) < limit:
            # a limit above the nodes this mix's EP group spans limits to those nodes (the same network
            # copies per token, workload.moe.target_nodes): written so, `clustersim run` of the plan
            # accepts it (check_ep_max_nodes: at most the nodes spanned)
            d["parallelism"] = {**par, "ep_max_nodes": spanned}
            sc = Scenario.model_validate(d)
        return sc

    def _ep_nodes(self, sc: Scenario) -> int:
        """Most nodes an EP group of ``sc`` spans on the resolved cluster (memoised by the degrees:
        walking every EP group of 2,048 ranks costs more than the screen of a mix)."""
        from clustersim.workload.layout import Layout
        from clustersim.workload.moe import ep_nodes_spanned

        par = sc.parallelism
        key = (par.tp, par.cp, par.ep, par.dp, par.pp, par.expert_tp, par.order)
        hit = self._spans.get(key)
        if hit is None:
            hit = self._spans[key] = ep_nodes_spanned(Layout.from_parallelism(par), par.ep, par.expert_tp,
                                                      self.rs.cluster.host_of)
        return hit

    def resolved(self, scenario: Scenario) -> ResolvedScenario:
        """``scenario`` on the already built cluster and profile."""
        rs = self.rs
        return ResolvedScenario(scenario, rs.file, rs.cluster, rs.profile, rs.topology_file, rs.profile_file)

    def screen(self, scenario: Scenario) -> Screen:
        """Memory of the fullest GPU and a lower bound on the step time, without building the DAG."""
        from clustersim.plan.bound import screen_step

        if self.comm is None:
            self.comm = comm_cache_for(self.rs)
        memory, bound = screen_step(self.resolved(scenario), self.units, self.comm)
        return Screen(memory=memory, bound_s=bound)

    def simulate(self, mix: Mix, fidelity: str = "analytical") -> RunResult:
        """``run_scenario`` of ``mix`` at ``fidelity`` (the collective-time memo shared across mixes)."""
        if self.comm is None:
            self.comm = comm_cache_for(self.rs)
        sc = self.scenario_for(mix, fidelity)
        return run_scenario(self.resolved(sc), fidelity=fidelity, comm=self.comm, memo=self.memo)
