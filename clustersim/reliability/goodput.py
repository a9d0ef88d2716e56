"""Expected goodput of a checkpointed run under random failures, closed form and Monte-Carlo.

The model (Daly 2006, "A higher order estimate of the optimum checkpoint interval for restart
dumps", FGCS 22:303) that both the closed form and the Monte-Carlo below follow:

* failures of the whole job arrive as a Poisson process of rate ``1/M``; the system MTBF ``M``
  comes from per-GPU and per-node rates, ``1/M = N_gpu/M_gpu + N_node/M_node``;
* the useful work ``W`` (seconds of training) is cut into segments of ``tau`` seconds, each
  followed by a checkpoint write of ``delta`` seconds; the last segment holds the remainder;
* a failure loses the segment in progress (work since the last completed checkpoint, and the
  checkpoint being written) and costs a restart of ``R`` seconds (re-queue, reload); a failure
  during the restart starts the restart again.

Under this model a segment of length ``L`` takes ``M e^{R/M} (e^{L/M} - 1)`` seconds on average
(exact, Daly's eq. 13), so the expected wall time is the sum over segments and goodput is
``W / E[wall]``. Young's interval ``sqrt(2 delta M)`` and Daly's higher-order one approximate the
``tau`` that minimises it; :func:`best_interval` finds the exact minimiser numerically.

Pure numpy: no scenario, no engine. Times are seconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from clustersim.errors import ClusterSimError
from clustersim.reliability.goodput_bounds import check_monte_carlo_work

HOUR = 3600.0
DAY = 86400.0


def system_mtbf_s(*, n_gpus: int, mtbf_gpu_hours: float | None, n_nodes: int = 0,
                  mtbf_node_hours: float | None = None) -> float:
    """Mean time between failures of a job spanning ``n_gpus`` GPUs on ``n_nodes`` nodes (seconds).

    Independent exponential failures add their rates: ``1/M = N_gpu/M_gpu + N_node/M_node``.
    ``None`` leaves a term out.

    >>> round(system_mtbf_s(n_gpus=1000, mtbf_gpu_hours=1000.0) / 3600, 6)
    1.0
    >>> round(system_mtbf_s(n_gpus=8, mtbf_gpu_hours=80.0, n_nodes=1, mtbf_node_hours=10.0) / 3600, 6)
    5.0
    """
    rate = 0.0
    for count, mtbf, name in ((n_gpus, mtbf_gpu_hours, "mtbf_gpu_hours"), (n_nodes, mtbf_node_hours, "mtbf_node_hours")):
        if mtbf is None:
            continue
        if not mtbf > 0:
            raise ClusterSimError(f"{name} must be > 0, got {mtbf}", field=name)
        rate += count / (mtbf * HOUR)
    if rate <= 0:
        raise ClusterSimError("no failure rate: give a per-GPU or per-node MTBF (and GPUs/nodes > 0)",
                              field="mtbf_gpu_hours")
    return 1.0 / rate


def young_interval(delta_s: float, mtbf_s: float) -> float:
    """Young's (1974) first-order optimum checkpoint interval ``sqrt(2 delta M)`` (seconds of work).

    >>> young_interval(50.0, 10000.0)
    1000.0
    """
    return math.sqrt(2.0 * delta_s * mtbf_s)


def daly_interval(delta_s: float, mtbf_s: float) -> float:
    """Daly's (2006, eq. 37) higher-order optimum interval (seconds of work).

    ``sqrt(2 delta M) [1 + sqrt(delta/2M)/3 + (delta/2M)/9] - delta`` for ``delta < 2M``, else ``M``.

    >>> round(daly_interval(50.0, 10000.0), 3)
    966.944
    """
    if delta_s >= 2.0 * mtbf_s:
        return mtbf_s
    x = delta_s / (2.0 * mtbf_s)
    return math.sqrt(2.0 * delta_s * mtbf_s) * (1.0 + math.sqrt(x) / 3.0 + x / 9.0) - delta_s


def _segments(work_s: float, interval_s: float) -> tuple[int, float]:
    """Number of full segments and the remainder of work (the last, shorter segment)."""
    n = int(math.floor(work_s / interval_s + 1e-12))
    rem = work_s - n * interval_s
    if rem < 1e-9 * work_s:
        rem = 0.0
    return n, rem


def expected_wall_time(*, work_s: float, interval_s: float, delta_s: float, restart_s: float, mtbf_s: float) -> float:
    """Expected wall-clock seconds to finish ``work_s`` of training under the module's model (exact).

    >>> round(expected_wall_time(work_s=100.0, interval_s=10.0, delta_s=0.0, restart_s=0.0, mtbf_s=1e12), 6)
    100.0
    """
    _check(work_s=work_s, interval_s=interval_s, delta_s=delta_s, restart_s=restart_s, mtbf_s=mtbf_s)
    n, rem = _segments(work_s, interval_s)
    m = mtbf_s
    try:
        per = math.expm1((interval_s + delta_s) / m)
        last = math.expm1((rem + delta_s) / m) if rem > 0 else 0.0
        return m * math.exp(restart_s / m) * (n * per + last)
    except OverflowError:  # segments hundreds of MTBFs long: the run practically never finishes
        return math.inf


def goodput(*, work_s: float, interval_s: float, delta_s: float, restart_s: float, mtbf_s: float) -> float:
    """Useful work / expected wall time (0..1).

    >>> round(goodput(work_s=1000.0, interval_s=100.0, delta_s=10.0, restart_s=0.0, mtbf_s=1e15), 6)
    0.909091
    """
    return work_s / expected_wall_time(work_s=work_s, interval_s=interval_s, delta_s=delta_s,
                                       restart_s=restart_s, mtbf_s=mtbf_s)


def best_interval(*, work_s: float, delta_s: float, restart_s: float, mtbf_s: float) -> float:
    """The checkpoint interval that maximises :func:`goodput` (seconds of work), found numerically.

    A log-spaced scan of 400 intervals from ``delta/100`` to the whole run (at most 50 MTBFs), then golden-section
    refinement around the best one (the remainder segment makes the curve slightly bumpy when the
    run holds only a few intervals, so the scan comes first).

    >>> t = best_interval(work_s=1e9, delta_s=50.0, restart_s=0.0, mtbf_s=10000.0)
    >>> abs(t - daly_interval(50.0, 10000.0)) / t < 0.01
    True
    """
    lo_t = max(delta_s, 1e-3 * min(mtbf_s, work_s)) / 100.0
    # beyond ~50 MTBFs a segment almost never completes (e^50): no optimum lies there
    grid = np.geomspace(lo_t, max(min(work_s, 50.0 * mtbf_s), 2 * lo_t), 400)

    def wall(t):
        return expected_wall_time(work_s=work_s, interval_s=float(t), delta_s=delta_s, restart_s=restart_s, mtbf_s=mtbf_s)

    vals = np.array([wall(t) for t in grid])
    i = int(np.argmin(vals))
    a, b = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    g = (math.sqrt(5.0) - 1.0) / 2.0
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = wall(c), wall(d)
    for _ in range(60):  # bracket shrinks by 0.618 each pass: 60 passes are ~1e-12 of it
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = wall(c)
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = wall(d)
    # the closed-form approximations join as candidates: the remainder segment can leave a
    # local bump that the scan's bracket straddles
    cands = [(a + b) / 2.0, float(grid[i]), young_interval(delta_s, mtbf_s), daly_interval(delta_s, mtbf_s)]
    cands = [t for t in cands if 0 < t <= work_s]
    return float(min(cands, key=wall))


@dataclass(frozen=True)
class MonteCarlo:
    """A seeded Monte-Carlo estimate of goodput with its confidence interval."""

    goodput: float
    ci_low: float
    ci_high: float
    mean_wall_s: float
    mean_failures: float
    trials: int
    seed: int
    confidence: float

    def contains(self, value: float) -> bool:
        """True when ``value`` lies inside the confidence interval."""
        return self.ci_low <= value <= self.ci_high


_Z = {0.95: 1.959963984540054, 0.99: 2.5758293035489004, 0.999: 3.2905267314918945}


def monte_carlo(*, work_s: float, interval_s: float, delta_s: float, restart_s: float, mtbf_s: float,
                trials: int = 2000, seed: int = 0, confidence: float = 0.99) -> MonteCarlo:
    """Simulate the run ``trials`` times, drawing every failure time (vectorised over trials).

    Each pass of the loop advances every unfinished trial by one attempt: an attempt at the
    current segment (succeeds when the next exponential failure comes after ``L`` seconds, else
    the time to the failure is lost) or an attempt at the restart after a failure. The mean wall
    time's normal-approximation interval (``z`` of ``confidence``) gives the goodput interval.

    >>> mc = monte_carlo(work_s=3600.0, interval_s=600.0, delta_s=30.0, restart_s=60.0, mtbf_s=7200.0, trials=500)
    >>> mc.contains(goodput(work_s=3600.0, interval_s=600.0, delta_s=30.0, restart_s=60.0, mtbf_s=7200.0))
    True
    """
    _check(work_s=work_s, interval_s=interval_s, delta_s=delta_s, restart_s=restart_s, mtbf_s=mtbf_s)
    if confidence not in _Z:
        raise ClusterSimError(f"confidence must be one of {sorted(_Z)}", field="confidence")
    if trials < 2:
        raise ClusterSimError("trials must be >= 2", field="trials")
    rng = np.random.default_rng(seed)
    n, rem = _segments(work_s, interval_s)
    seg_len = np.full(n + (1 if rem > 0 else 0), interval_s + delta_s)
    if rem > 0:
        seg_len[-1] = rem + delta_s
    n_seg = len(seg_len)
    wall = np.zeros(trials)
    failures = np.zeros(trials, dtype=np.int64)
    seg = np.zeros(trials, dtype=np.int64)        # index of the segment being worked on
    restarting = np.zeros(trials, dtype=bool)     # in a restart (after a failure)
    active = seg < n_seg
    while active.any():
        idx = np.flatnonzero(active)
        x = rng.exponential(mtbf_s, size=idx.size)  # time to the next failure (memoryless)
        rs = restarting[idx]
        need = np.where(rs, restart_s, seg_len[np.minimum(seg[idx], n_seg - 1)])
        ok = x >= need
        wall[idx] += np.where(ok, need, x)
        failures[idx] += ~ok
        # a finished attempt: a restart goes back to work, a segment moves to the next one
        seg[idx[ok & ~rs]] += 1
        restarting[idx[ok & rs]] = False
        restarting[idx[~ok]] = restart_s > 0
        active = seg < n_seg
    z = _Z[confidence]
    mean = float(wall.mean())
    half = z * float(wall.std(ddof=1)) / math.sqrt(trials)
    return MonteCarlo(goodput=work_s / mean, ci_low=work_s / (mean + half),
                      ci_high=work_s / max(mean - half, 1e-300), mean_wall_s=mean,
                      mean_failures=float(failures.mean()), trials=trials, seed=seed, confidence=confidence)


def _check(**kw: float) -> None:
    for name in ("work_s", "interval_s", "mtbf_s"):
        if not kw[name] > 0 or not math.isfinite(kw[name]):
            raise ClusterSimError(f"{name} must be a positive number, got {kw[name]}", field=name)
    for name in ("delta_s", "restart_s"):
        if not kw[name] >= 0 or not math.isfinite(kw[name]):
            raise ClusterSimError(f"{name} must be >= 0, got {kw[name]}", field=name)


def goodput_report(*, work_s: float, n_gpus: int, n_nodes: int, checkpoint_bytes: float, write_Bps: float,
                   restart_s: float, mtbf_gpu_hours: float | None, mtbf_node_hours: float | None,
                   trials: int = 2000, seed: int = 0) -> dict:
    """Everything ``clustersim goodput`` prints, as a JSON-ready dict.

    The checkpoint write time is ``checkpoint_bytes / write_Bps``; the goodput at Young's, Daly's
    and the numerically best interval, and a Monte-Carlo run at the best interval with its 99 %
    confidence interval and whether the closed form lies inside it.

    >>> r = goodput_report(work_s=86400.0, n_gpus=1024, n_nodes=128, checkpoint_bytes=1e12, write_Bps=1e11,
    ...                    restart_s=600.0, mtbf_gpu_hours=5e4, mtbf_node_hours=None, trials=200)
    >>> r["checkpoint_write_s"], r["monte_carlo"]["agrees"]
    (10.0, True)
    """
    if not write_Bps > 0:
        raise ClusterSimError(f"checkpoint write bandwidth must be > 0, got {write_Bps}", field="ckpt_write_GBps")
    if not checkpoint_bytes >= 0:
        raise ClusterSimError(f"checkpoint size must be >= 0, got {checkpoint_bytes}", field="checkpoint_bytes")
    m = system_mtbf_s(n_gpus=n_gpus, mtbf_gpu_hours=mtbf_gpu_hours, n_nodes=n_nodes, mtbf_node_hours=mtbf_node_hours)
    delta = checkpoint_bytes / write_Bps
    case = dict(work_s=work_s, delta_s=delta, restart_s=restart_s, mtbf_s=m)
    young, daly = young_interval(delta, m), daly_interval(delta, m)
    best = best_interval(**case)
    g_best = goodput(interval_s=best, **case)
    n, rem = _segments(work_s, best)
    check_monte_carlo_work(expected_failures=expected_wall_time(interval_s=best, **case) / m,
                           segments=n + (rem > 0), trials=trials, mtbf_s=m, lost_s=restart_s + delta)
    mc = monte_carlo(interval_s=best, trials=trials, seed=seed, **case)
    return {
        "n_gpus": n_gpus, "n_nodes": n_nodes, "mtbf_gpu_hours": mtbf_gpu_hours, "mtbf_node_hours": mtbf_node_hours,
        "system_mtbf_s": m, "run_work_s": work_s, "expected_failures": expected_wall_time(interval_s=best, **case) / m,
        "checkpoint_bytes": checkpoint_bytes, "checkpoint_write_s": delta, "restart_s": restart_s,
        "intervals_s": {"young": young, "daly": daly, "best": best},
        "goodput": {"young": goodput(interval_s=young, **case), "daly": goodput(interval_s=daly, **case),
                    "best": g_best},
        "expected_wall_s": work_s / g_best,
        "monte_carlo": {"goodput": mc.goodput, "ci_low": mc.ci_low, "ci_high": mc.ci_high,
                        "confidence": mc.confidence, "trials": mc.trials, "seed": mc.seed,
                        "mean_failures": mc.mean_failures, "agrees": mc.contains(g_best)},
    }
