"""Carry a profile's uncertainty into a step-time band.

The profile's collective segments and link classes carry 95% confidence intervals from
the calibration fit. The band is the step time simulated twice more: once with every
calibrated quantity at its optimistic bound (alpha low, bandwidth high) and once at its
pessimistic bound. Both runs use the same schedule, so the band shows how much the
calibration's uncertainty can move the answer (not run-to-run noise of real hardware).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from clustersim.config.profile import Profile


def _at(value: float, ci: Any, side: int, floor: float) -> float:
    if not ci:
        return value
    return max(float(ci[side]), floor)


def profile_at_bound(profile: Profile, optimistic: bool) -> Profile:
    """A copy of ``profile`` with every CI-carrying parameter at one end of its interval."""
    data = profile.model_dump(mode="python")
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


def step_time_band(resolved: Any, fidelity: str | None = None, reduced: bool = True) -> tuple[float, float]:
    """(fast, slow) step times of a :class:`ResolvedScenario` at the profile's CI bounds."""
    from clustersim.simulate.run import run_scenario

    out = []
    for optimistic in (True, False):
        rs = dataclasses.replace(resolved, profile=profile_at_bound(resolved.profile, optimistic))
        out.append(run_scenario(rs, fidelity=fidelity, reduced=reduced).step_time_s)
    return min(out), max(out)
