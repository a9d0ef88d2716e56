"""Carry a profile's uncertainty into a step-time band.

The band is the step time simulated twice more: once with every collective quantity at its
optimistic bound (latency low, bandwidth high) and once at its pessimistic bound. Both runs use
the same schedule, so the band shows how much the collectives' uncertainty can move the answer.
Where the profile measured how much its host's own speed varies between runs (``host.speed_band``:
the 95% quantile of the host probe program's step error over repeated runs), every op's host issue
time (kernel and collective calls, FSDP2 hooks, the optimizer) moves by that factor too, the slow side
with the slow collectives: the one run-to-run noise of real hardware
the band carries, because a host-bound step follows it (docs/validation.md 6n).

Where the profile states its held-out error (``uncertainty.time_factor`` f: the 95% quantile of
``|log(predicted/measured)|`` on collective measurements the profile was not built from), every
link class, collective entry and link-model parameter moves by f: latencies x f and bandwidths
(efficiencies) / f on the slow side,
the reverse on the fast side (a bandwidth never above the line rate). That band is meant to hold
95% of real calls. A profile without it falls back to the 95% confidence intervals of its fitted
parameters, which only say how well the fitted lines are pinned down (docs/calibration.md).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Sequence

from clustersim.config.profile import Profile
from clustersim.simulate.resolve import ResolvedScenario


def _at(value: float, ci: Sequence[float] | None, side: int, floor: float) -> float:
    """The ``side`` end (0 low, 1 high) of the confidence interval ``ci`` of ``value`` (a dumped
    profile's ``[low, high]``), at least ``floor``; ``value`` itself where it has none."""
    if not ci:
        return value
    return max(float(ci[side]), floor)


def _scaled(data: dict, factor: float, optimistic: bool) -> dict:
    """Every latency and bandwidth of the profile's collectives moved by ``factor``."""
    lat, bw = (1.0 / factor, factor) if optimistic else (factor, 1.0 / factor)
    for entry in data.get("collectives", []):
        for s in entry["segments"]:
            s["alpha_us"] *= lat
            s["algbw_GBps"] *= bw
    for link in data.get("links", {}).values():
        link["latency_us"] *= lat
        if link.get("efficiency") is not None:   # a fraction of line rate: at most 1
            link["efficiency"] = min(1.0, link["efficiency"] * bw)
        if link.get("bandwidth_GBps") is not None:
            b = link["bandwidth_GBps"] * bw
            link["bandwidth_GBps"] = min(b, link["line_rate_GBps"]) if link.get("line_rate_GBps") else b
    lm = data.get("link_model")
    if lm:   # the fitted link model moves the same way: its latencies by lat, its rates by bw
        for per in lm["links"].values():
            for cell in per.values():
                cell["latency_us"] *= lat
                cell["efficiency"] = min(1.0, cell["efficiency"] * bw)
        lm["base_us"] = {p: v * lat for p, v in lm["base_us"].items()}
        for op in lm["ops"].values():
            op["floor_us"] *= lat
            if op.get("local_GBps") is not None:
                op["local_GBps"] *= bw
    return data


def profile_at_bound(profile: Profile, optimistic: bool) -> Profile:
    """A copy of ``profile`` with its collective quantities at one end of their band.

    >>> p = Profile(name="x", links={"nvlink": {"latency_us": 3.0, "bandwidth_GBps": 300.0,
    ...             "line_rate_GBps": 450.0}}, uncertainty={"time_factor": 1.2, "held_out_points": 10})
    >>> slow = profile_at_bound(p, optimistic=False).links["nvlink"]
    >>> round(slow.latency_us, 3), round(slow.bandwidth_GBps, 1)
    (3.6, 250.0)
    """
    data = profile.model_dump(mode="python")
    if profile.uncertainty is not None:
        return Profile.model_validate(_scaled(data, profile.uncertainty.time_factor, optimistic))
    lat_side, bw_side = (0, 1) if optimistic else (1, 0)
    for entry in data.get("collectives", []):
        for s in entry["segments"]:
            s["alpha_us"] = _at(s["alpha_us"], s.get("alpha_ci_us"), lat_side, 0.0)
            s["algbw_GBps"] = _at(s["algbw_GBps"], s.get("algbw_ci_GBps"), bw_side, 1e-3 * s["algbw_GBps"])
    for link in data.get("links", {}).values():
        link["latency_us"] = _at(link["latency_us"], link.get("latency_ci_us"), lat_side, 0.0)
        if link.get("efficiency") is not None:  # a fraction of line rate: at most 1
            link["efficiency"] = min(1.0, _at(link["efficiency"], link.get("efficiency_ci"), bw_side,
                                              1e-3 * link["efficiency"]))
        if link.get("bandwidth_GBps") is not None:
            bw = _at(link["bandwidth_GBps"], link.get("bandwidth_ci_GBps"), bw_side, 1e-3 * link["bandwidth_GBps"])
            link["bandwidth_GBps"] = min(bw, link["line_rate_GBps"]) if link.get("line_rate_GBps") else bw
    return Profile.model_validate(data)


def band_factors(profile: Profile) -> dict[str, float | None]:
    """The factors a band moves by: the collectives' held-out one and the host speed's (None: the profile states none;
    the collectives then fall back to their fitted confidence intervals).

    >>> band_factors(Profile(name="x", uncertainty={"time_factor": 1.2, "held_out_points": 10}))
    {'collectives': 1.2, 'host': None}
    """
    return {"collectives": profile.uncertainty.time_factor if profile.uncertainty is not None else None,
            "host": profile.host.speed_band.time_factor if profile.host.speed_band is not None else None}


def step_time_band(resolved: ResolvedScenario, fidelity: str | None = None, reduced: bool = True) -> tuple[float, float]:
    """(fast, slow) step times of a :class:`ResolvedScenario` at the profile's bounds: its collectives'
    (:func:`profile_at_bound`) and, where the profile measured it, its host's speed (``host.speed_band``)."""
    from clustersim.simulate.run import run_scenario

    band = resolved.profile.host.speed_band
    f = band.time_factor if band is not None else 1.0
    out = []
    for optimistic in (True, False):
        # the host's own speed (docs/validation.md 6n): every op's host issue time x f on the slow side, / f on the fast
        rs = dataclasses.replace(resolved, profile=profile_at_bound(resolved.profile, optimistic),
                                 host_factor=1.0 / f if optimistic else f)
        out.append(run_scenario(rs, fidelity=fidelity, reduced=reduced).step_time_s)
    return min(out), max(out)


#: the host-speed step the elasticity is measured over: every host issue time x 1.25 (the measured spreads are
#: 1.20-1.23, host.speed_band; a step this size stays in the regime the step is in)
ELASTICITY_FACTOR = 1.25


def host_elasticity(resolved: ResolvedScenario, reduced: bool = True, base_s: float | None = None,
                    fidelity: str = "analytical") -> float:
    """How much of the step moves with the host's speed: ``log(T(f) / T) / log f`` at analytical fidelity, every op's
    host issue time x f (:data:`ELASTICITY_FACTOR`); ``base_s``: the analytical step T when already simulated.

    1 for a step that waits on its host throughout, 0 for one whose host issues ahead of the GPU. Always simulated:
    the breakdown cannot tell (6 of the 244 real runs of the studies move with their host although their compute
    stream shows under 1% of host wait and bubble).
    """
    from clustersim.simulate.run import run_scenario

    if base_s is None:
        base_s = run_scenario(resolved, fidelity=fidelity, reduced=reduced).step_time_s
    slow = run_scenario(dataclasses.replace(resolved, host_factor=resolved.host_factor * ELASTICITY_FACTOR),
                        fidelity=fidelity, reduced=reduced).step_time_s
    if base_s <= 0:
        return 0.0
    return max(0.0, min(1.0, math.log(slow / base_s) / math.log(ELASTICITY_FACTOR)))


def with_host_evidence(res, resolved: ResolvedScenario, reduced: bool = True, base_s: float | None = None,
                       elasticity: float | None = None):
    """``res`` (a :class:`~clustersim.simulate.result.RunResult`) with its ``evidence`` taken again with the step's
    host elasticity (:func:`host_elasticity`; ``elasticity`` when already known). Returns ``res``."""
    from clustersim.simulate.evidence import evidence_of

    if res.evidence is None or res.jobs is not None:   # several jobs run at flow only: no analytical twin
        return res
    if elasticity is None:
        # link faults run at flow only: the twin then runs at the run's own fidelity
        fid = res.fidelity if resolved.scenario.faults is not None else "analytical"
        elasticity = host_elasticity(resolved, reduced, base_s if base_s is not None else
                                     (res.step_time_s if res.fidelity == fid else None), fidelity=fid)
    cluster = resolved.cluster
    res.evidence = evidence_of(resolved.profile, res.breakdown, res.step_time_s, res.links, cluster.n_nodes,
                               cluster.gpu_spec.name, memory=res.memory, topology=cluster.spec,
                               host_elasticity=elasticity, crossing=res.evidence.get("crossing_hosts"))
    res.evidence["host_elasticity"] = round(elasticity, 4)
    return res
