"""Checkpoint size of a scenario: the model state a restart needs, from the memory model.

A checkpoint holds the weights and the optimizer state (AdamW moments and the fp32 master copy
when there is one), once: data-parallel replicas hold copies of the same state, and ZeRO shards
split it without adding to it, so the sum over the ranks of one replica of the sharded states is
``params x (weight bytes + optimizer bytes)`` per parameter. Gradients are not saved (they are
recomputed by the next step).
"""

from __future__ import annotations

from clustersim.config.scenario import Scenario
from clustersim.errors import ClusterSimError
from clustersim.workload.memory import state_bytes_per_param
from clustersim.workload.model import ModelDims


def checkpoint_bytes(scenario: Scenario) -> float:
    """Bytes one full checkpoint of the scenario's model writes.

    >>> from clustersim.config.scenario import Scenario
    >>> sc = Scenario.model_validate({"name": "t", "cluster": {"topology": "hgx-h200"},
    ...     "model": {"preset": "llama3-8b"}})
    >>> round(checkpoint_bytes(sc) / 1e9)    # 8.0e9 params x (2 bf16 weights + 12 fp32 master, m, v)
    112
    """
    if scenario.model is None:
        raise ClusterSimError("a checkpoint size needs a model: section (this scenario runs a generic job:)",
                              field="model")
    n = ModelDims.from_section(scenario.model).total_params
    sb = state_bytes_per_param(scenario.training.precision, scenario.training.optimizer)
    return float(n * (sb.params + sb.optimizer))
