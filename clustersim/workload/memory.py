"""Memory per GPU: model states from the precision fields (with ZeRO sharding) and activations.

Model states per parameter (bytes), with ``P`` = params dtype, ``G`` = grads dtype, ``O`` =
optimizer-state dtype:

* weights ``P``; gradients ``G``; optimizer ``2 O`` for AdamW (m and v; 0 for plain SGD) plus
  4 for an fp32 master copy when ``master_weights`` and the params are not already fp32.
* Megatron mixed precision (bf16 params, fp32 main grads, fp32 master + moments) = 2 + 4 + 12 = 18;
  with bf16 grads (ZeRO paper's ``K = 12`` case) = 16; pure bf16 AdamW (bf16 params, grads,
  moments, no master) = 2 + 2 + 4 = 8.
* ZeRO-1 shards the optimizer bytes over DP, ZeRO-2 also the gradients, ZeRO-3 also the weights
  (ZeRO paper §5; ``P_os = 4 + K/N_d`` with 16-bit grads).

:func:`step_memory` adds the activations a pipeline rank keeps for the micro-batches in flight
(Korthikanti Table 2 per layer, :meth:`ModelDims.layer_activation_bytes`) and the transients of a
step (logits, gathered ZeRO-3 layers), and returns the fullest pipeline rank.
"""

from __future__ import annotations

from dataclasses import dataclass

from clustersim.workload.model import DTYPE_BYTES
from clustersim.workload.schedule import max_in_flight



@dataclass(frozen=True)
class StateBytes:
    """Bytes per parameter of each kind of model state (before ZeRO sharding)."""

    params: float
    grads: float
    optimizer: float

    @property
    def total(self) -> float:
        """Sum of the three."""
        return self.params + self.grads + self.optimizer


def state_bytes_per_param(precision, optimizer: str) -> StateBytes:
    """Bytes per parameter of weights, gradients and optimizer state.

    Examples
    --------
    >>> from clustersim.config.scenario import PrecisionSection
    >>> state_bytes_per_param(PrecisionSection(), "adamw").total
    18
    >>> state_bytes_per_param(PrecisionSection(grads="bf16", optimizer_states="bf16", master_weights=False), "adamw").total
    8
    """
    p = DTYPE_BYTES[precision.params]
    g = DTYPE_BYTES[precision.grads]
    o = 2 * DTYPE_BYTES[precision.optimizer_states] if optimizer == "adamw" else 0
    if precision.master_weights and precision.params != "fp32":
        o += 4
    return StateBytes(p, g, o)


def sharded_states(n_params: float, sb: StateBytes, zero: int, dp: int) -> dict[str, float]:
    """Bytes of params, grads and optimizer held by one GPU for ``n_params`` under ZeRO stage ``zero``."""
    d = max(dp, 1)
    return {
        "params": n_params * sb.params / (d if zero >= 3 else 1),
        "grads": n_params * sb.grads / (d if zero >= 2 else 1),
        "optimizer": n_params * sb.optimizer / (d if zero >= 1 else 1),
    }


def optimizer_update_bytes(precision, optimizer: str) -> float:
    """HBM bytes the fused optimizer step reads and writes per parameter it updates.

    AdamW: read grad, read+write m and v, read+write the master (or the weights), write the
    16-bit working copy when a master exists; SGD: read grad, read+write the weights (master).
    Plus one read of the gradients for the global-norm clip.
    """
    g = DTYPE_BYTES[precision.grads]
    p = DTYPE_BYTES[precision.params]
    master = precision.master_weights and precision.params != "fp32"
    w = 4 if master else p
    total = g + 2 * w + g  # grad read (update) + weight read/write + grad read (norm)
    if optimizer == "adamw":
        total += 4 * DTYPE_BYTES[precision.optimizer_states]
    if master:
        total += p
    return float(total)


def step_memory(step, capacity_bytes: float) -> dict:
    """Per-GPU memory of the fullest pipeline rank of a training step (bytes).

    ``step``: a :class:`~clustersim.workload.transformer.TransformerStep` (not imported here: the
    step module imports this one). Per pipeline rank: model states of its parameters (ZeRO-sharded), activations of the
    micro-batches its schedule keeps in flight (its layers' average per model chunk; the first
    virtual stage also keeps the embedding's dropout output), and transients: the last stage's fp32
    logits and their 16-bit source for one micro-batch, and under ZeRO-3 one gathered layer with its
    gradients (two resident units). Returns that rank's row with ``capacity_bytes``, ``fits`` and
    the bytes per parameter.
    """
    model, training, par = step.model, step.training, step.parallelism
    tp, dp, virtual_stages = step.tp, step.dp, step.virtual_stages
    state_bytes = state_bytes_per_param(training.precision, training.optimizer)
    act_layer = model.layer_activation_bytes(step.micro_batch, tp, step.sequence_parallel, training.recompute)
    tokens = step.micro_batch * model.seq_len
    best = None
    for stage in range(step.pp):
        inflight = max_in_flight(step.orders[stage])
        states = sharded_states(step.stage_params(stage), state_bytes, par.zero, dp)
        vstages = step.virtual_stages_of(stage)
        acts = inflight * (sum(step.layers_per_virtual_stage[vs] for vs in vstages) / len(vstages)) * act_layer
        if 0 in vstages:  # embedding dropout output per micro-batch in flight
            sp_shard = tp if step.sequence_parallel else 1
            acts += inflight * tokens * model.hidden * 2 / sp_shard / max(virtual_stages, 1)
        transient = 0.0
        if step.n_virtual_stages - 1 in vstages:
            vocab_local = model.vocab / (tp if (step.vocab_parallel and tp > 1) else 1)
            transient += tokens * vocab_local * (4 + 2)  # fp32 logits + their 16-bit source, one micro-batch
        if par.zero == 3 and dp > 1:
            layer_forward = step.units.layer.forward
            # gathered layer + its grads
            transient += 2 * layer_forward.param_count * (step.param_dtype_bytes + step.grad_dtype_bytes)
        peak = states["params"] + states["grads"] + states["optimizer"] + acts + transient
        row = {"stage": stage, **states, "activations": acts, "transient": transient, "peak_bytes_per_gpu": peak}
        if best is None or peak > best["peak_bytes_per_gpu"]:
            best = row
    best["capacity_bytes"] = capacity_bytes
    best["fits"] = best["peak_bytes_per_gpu"] <= capacity_bytes
    best["bytes_per_param"] = {"params": state_bytes.params, "grads": state_bytes.grads,
                               "optimizer": state_bytes.optimizer}
    return best
