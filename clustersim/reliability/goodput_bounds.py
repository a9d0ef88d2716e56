"""Bounds on the options of ``clustersim goodput``, checked before any work, each with its reason.

The options scale the work directly (``--trials`` arrays, the Monte-Carlo loop runs once per
failure and per checkpoint segment of the slowest trial) or through the failure count
(``--run-days`` over the system MTBF). Each has a range far beyond real runs; outside it the
command exits 2 naming the option, the bound and why. Then :func:`check_monte_carlo_work`
refuses a combination whose expected failures would make the Monte-Carlo run away (a GPU MTBF
of 1e-9 h is a failure every 3.6 us), with the estimate.

Examples
--------
>>> check_goodput_options(run_days=54, restart_min=10, trials=2000, seed=0, ckpt_write_GBps=2000,
...                       ckpt_GB=None, gpus=16384, mtbf_gpu_hours=50677, mtbf_node_hours=None)
>>> check_goodput_options(run_days=1e30, restart_min=10, trials=2000, seed=0, ckpt_write_GBps=10,
...                       ckpt_GB=None, gpus=None, mtbf_gpu_hours=1000, mtbf_node_hours=None)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
clustersim.errors.ClusterSimError: --run-days: 1e+30 is outside 1e-06..3,650 (...)
"""

from __future__ import annotations

import math

from clustersim.budget import check_bound
from clustersim.errors import ClusterSimError

#: option -> (smallest, largest, why). Inclusive ranges.
GOODPUT_BOUNDS: dict[str, tuple[float, float, str]] = {
    "--run-days": (1e-6, 3650, "at most ten years of training work; the longest published pre-training "
                   "runs take months (Llama 3 405B: 54 days)"),
    "--restart-min": (0, 10080, "at most a week from a failure to training again; longer is a new run"),
    "--trials": (2, 100_000, "the Monte-Carlo band narrows as 1/sqrt(trials): 100,000 trials give 1/7 of the "
                 "default 2,000's width, and each trial is a loop over its failures"),
    "--seed": (0, 2**32 - 1, "a 32-bit seed, as numpy's legacy seeding and most tools take"),
    "--ckpt-write-GBps": (1e-3, 1e6, "1 MB/s (one slow disk) to 1 PB/s (100x the fastest parallel file "
                          "systems, ~10 TB/s in 2024)"),
    "--ckpt-GB": (0.0, 1e9, "at most 1 EB; the largest models' weights and optimizer state are ~10 TB"),
    "--mtbf-gpu-hours": (1.0, 1e9, "from 1 hour to 10^9 hours; measured GPU MTBFs are 10^4-10^5 hours "
                         "(Llama 3 405B: 419 interruptions in 54 days on 16,384 GPUs)"),
    "--mtbf-node-hours": (1.0, 1e9, "from 1 hour to 10^9 hours; measured node MTBFs are 10^4-10^5 hours"),
}

#: Most Monte-Carlo attempts (trials x attempts of the slowest trial, each a few array operations):
#: 2,000 trials of a 54-day run with ~420 failures and ~400 segments are ~1.6 million; 5 x 10^7 take
#: about 10 s on one core.
MAX_MC_ATTEMPTS = 5 * 10**7


def _num(x: float | int) -> str:
    return f"{x:,}" if isinstance(x, int) else f"{x:g}"


def _check(option: str, value: float | int | None) -> None:
    if value is None:
        return
    lo, hi, why = GOODPUT_BOUNDS[option]
    if isinstance(value, float) and not math.isfinite(value):
        raise ClusterSimError(f"must be a finite number, got {value}", field=option)
    if not lo <= value <= hi:
        raise ClusterSimError(f"{_num(value)} is outside {_num(lo)}..{_num(hi)} ({why})", field=option)


def check_goodput_options(*, run_days: float, restart_min: float, trials: int, seed: int | None,
                          ckpt_write_GBps: float, ckpt_GB: float | None, gpus: int | None,
                          mtbf_gpu_hours: float | None, mtbf_node_hours: float | None) -> None:
    """Refuse any option of ``clustersim goodput`` outside :data:`GOODPUT_BOUNDS` (and ``--gpus``
    beyond the GPU bound of :mod:`clustersim.budget`), before anything is computed."""
    for option, value in (("--run-days", run_days), ("--restart-min", restart_min), ("--trials", trials),
                          ("--seed", seed), ("--ckpt-write-GBps", ckpt_write_GBps), ("--ckpt-GB", ckpt_GB),
                          ("--mtbf-gpu-hours", mtbf_gpu_hours), ("--mtbf-node-hours", mtbf_node_hours)):
        _check(option, value)
    if gpus is not None:
        if gpus < 1:
            raise ClusterSimError(f"must be >= 1, got {gpus}", field="--gpus")
        check_bound("gpus", gpus, field="--gpus")


def check_monte_carlo_work(*, expected_failures: float, segments: int, trials: int, mtbf_s: float,
                           lost_s: float, field: str = "MTBF") -> None:
    """Refuse a Monte-Carlo run whose attempts (failures, restarts and segments of a trial, times the
    trials) would exceed :data:`MAX_MC_ATTEMPTS`, giving the estimate.

    ``lost_s`` is what one failure costs at least (the restart plus a checkpoint write), named in the
    message when it is what makes the run never finish.
    """
    attempts = trials * (2.0 * expected_failures + segments)
    if not math.isfinite(expected_failures) or attempts > MAX_MC_ATTEMPTS:
        fails = "practically never finishes" if not math.isfinite(expected_failures) else \
            f"expects {expected_failures:,.3g} failures"
        work = f"about {attempts:,.3g}" if math.isfinite(attempts) else "unbounded"
        raise ClusterSimError(
            f"the run {fails} (the system fails every {mtbf_s:.3g} s on average and a failure costs at least "
            f"{lost_s:.3g} s): {work} Monte-Carlo attempts, more than the bound of "
            f"{MAX_MC_ATTEMPTS:,}; raise the MTBFs or lower --trials", field=field)
