"""Goodput of a scenario's run: its GPU and node counts and checkpoint size into the closed form.

:func:`scenario_goodput` is what ``clustersim goodput`` computes: the scenario (with ``--set``
overrides) gives the GPUs, the GPUs per node and, unless a size is given, the checkpoint
(weights and optimizer state of its model, :func:`~clustersim.reliability.checkpoint.checkpoint_bytes`);
:func:`~clustersim.reliability.goodput.goodput_report` does the rest. See docs/goodput-and-faults.md.

>>> from clustersim.config.base import shipped_dir
>>> d = scenario_goodput(shipped_dir("scenario") / "gpt3-175b.yaml", mtbf_gpu_hours=5e4, ckpt_write_GBps=100, restart_min=15,
...                      run_days=30, gpus=16384, trials=200)
>>> d["scenario"], d["n_gpus"], d["n_nodes"]
('gpt3-175b', 16384, 2048)
"""

from __future__ import annotations

import math
from pathlib import Path

from clustersim.errors import ClusterSimError
from clustersim.reliability.checkpoint import checkpoint_bytes
from clustersim.reliability.goodput import DAY, goodput_report
from clustersim.reliability.goodput_bounds import check_goodput_options
from clustersim.simulate.resolve import resolve_scenario


def scenario_goodput(scenario: str | Path, *, overrides: list[str] | None = None, mtbf_gpu_hours: float | None = None,
                     mtbf_node_hours: float | None = None, ckpt_write_GBps: float, restart_min: float,
                     run_days: float, gpus: int | None = None, ckpt_GB: float | None = None, trials: int = 2000,
                     seed: int | None = None) -> dict:
    """Expected goodput of ``run_days`` of training of ``scenario`` under failures, and the best interval.

    Parameters
    ----------
    scenario, overrides:
        Scenario file and ``--set`` overrides.
    mtbf_gpu_hours, mtbf_node_hours:
        Mean time between failures of one GPU and of one node, hours (at least one).
    ckpt_write_GBps, restart_min:
        Aggregate checkpoint write bandwidth (GB/s) and minutes from a failure to training again.
    run_days:
        Days of useful training work.
    gpus:
        Scale to this many GPUs, in nodes of the scenario's size; default the scenario's cluster.
    ckpt_GB:
        Checkpoint size in GB; default the weights and optimizer state of the scenario's model.
    trials, seed:
        Monte-Carlo runs and their seed (default the scenario's ``simulation.seed``).

    Returns
    -------
    dict
        ``scenario`` and :func:`~clustersim.reliability.goodput.goodput_report`'s document.
    """
    check_goodput_options(run_days=run_days, restart_min=restart_min, trials=trials, seed=seed,
                          ckpt_write_GBps=ckpt_write_GBps, ckpt_GB=ckpt_GB, gpus=gpus,
                          mtbf_gpu_hours=mtbf_gpu_hours, mtbf_node_hours=mtbf_node_hours)
    rs = resolve_scenario(scenario, overrides or [])
    c = rs.cluster
    n_gpus, gpn = c.n_gpus, c.gpus_per_host
    if gpus is not None:
        if gpus < 1:
            raise ClusterSimError(f"--gpus must be >= 1, got {gpus}", field="--gpus")
        n_gpus = gpus
    n_nodes = math.ceil(n_gpus / gpn)
    size = ckpt_GB * 1e9 if ckpt_GB is not None else checkpoint_bytes(rs.scenario)
    if not run_days > 0:
        raise ClusterSimError(f"--run-days must be > 0, got {run_days}", field="--run-days")
    if not restart_min >= 0:
        raise ClusterSimError(f"--restart-min must be >= 0, got {restart_min}", field="--restart-min")
    d = goodput_report(work_s=run_days * DAY, n_gpus=n_gpus, n_nodes=n_nodes, checkpoint_bytes=size,
                       write_Bps=ckpt_write_GBps * 1e9, restart_s=restart_min * 60.0,
                       mtbf_gpu_hours=mtbf_gpu_hours, mtbf_node_hours=mtbf_node_hours, trials=trials,
                       seed=rs.scenario.simulation.seed if seed is None else seed)
    return {"scenario": rs.scenario.name, **d}
