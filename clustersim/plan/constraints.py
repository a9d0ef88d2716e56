"""Why a mix is dropped: named constraints, each with its reason, checked in a fixed order.

The structural rules mirror :meth:`clustersim.config.scenario.Scenario._rules` (the same rules a
scenario file must pass) so they can be counted and explained per mix before any scenario is
built; the scenario is still validated afterwards (``scenario-rules``), so the two can never
disagree silently. ``memory`` is checked on the simulator's own memory report
(:meth:`TransformerStep.memory`), in :mod:`clustersim.plan.search`.

A mix is charged to the *first* constraint it breaks, so the counts add up to the dropped total.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from clustersim.config.scenario import split_schedule_problem
from clustersim.plan.space import Mix


@dataclass(frozen=True)
class Context:
    """The facts of the scenario the structural rules need."""

    heads: int
    kv_heads: int
    ffn_hidden: int
    layers: int
    seq_len: int
    global_batch: int
    gpus_per_node: int
    tp_across_nodes: bool = False
    attention: str = "flash"
    experts: int = 0  # routed experts of an MoE model (0: dense)
    expert_tp: int = 1  # the scenario's parallelism.expert_tp


def _tp_shapes(m: Mix, c: Context) -> str | None:
    for name, n in (("heads", c.heads), ("kv_heads", c.kv_heads), ("ffn_hidden", c.ffn_hidden)):
        if n % m.tp:
            return f"tp={m.tp} does not divide model.{name}={n}"
    return None


def _tp_placement(m: Mix, c: Context) -> str | None:
    if not c.tp_across_nodes and m.tp > c.gpus_per_node:
        return f"tp={m.tp} spans nodes ({c.gpus_per_node} GPUs per NVLink domain; --tp-across-nodes allows it)"
    return None


def _pipeline_depth(m: Mix, c: Context) -> str | None:
    if m.pp * m.virtual_stages > c.layers:
        return f"pp*virtual_stages={m.pp * m.virtual_stages} exceeds model.layers={c.layers}"
    return None


def _batch(m: Mix, c: Context) -> str | None:
    if c.global_batch % (m.micro_batch * m.dp):
        return f"global_batch={c.global_batch} not divisible by micro_batch*dp={m.micro_batch}*{m.dp}"
    return None


def _interleaved(m: Mix, c: Context) -> str | None:
    if m.schedule == "interleaved" and m.pp > 1:
        n_mb = c.global_batch // (m.micro_batch * m.dp)
        if n_mb % m.pp:
            return f"interleaved needs micro-batches ({n_mb}) divisible by pp={m.pp}"
    return None


def _split_schedule(m: Mix, c: Context) -> str | None:
    return split_schedule_problem(m.schedule, m.pp, m.virtual_stages, c.global_batch // (m.micro_batch * m.dp))


def _sequence_parallel(m: Mix, c: Context) -> str | None:
    if m.sequence_parallel and m.tp > 1 and c.seq_len % m.tp:
        return f"sequence parallel needs tp={m.tp} to divide seq_len={c.seq_len}"
    return None


def _fsdp_pipeline(m: Mix, c: Context) -> str | None:
    if m.zero == 3 and m.pp > 1:
        return f"zero 3 (FSDP) with pp={m.pp} is not supported (use zero <= 2 with pipelines)"
    return None


def _expert_parallel(m: Mix, c: Context) -> str | None:
    """The expert grid of ``Scenario._moe_rules``: EP x expert-TP tiles the dp*tp ranks of a stage."""
    if not c.experts:
        return f"ep={m.ep} needs an MoE model (model.moe)" if m.ep > 1 else None
    if c.experts % m.ep:
        return f"ep={m.ep} does not divide model.moe.experts={c.experts}"
    if (m.dp * m.tp) % (m.ep * c.expert_tp):
        return f"ep*expert_tp={m.ep}*{c.expert_tp} does not divide dp*tp={m.dp}*{m.tp} (EP is carved out of them)"
    if m.tp > 1 and not m.sequence_parallel:
        return f"tp={m.tp} with experts needs sequence parallel (Megatron-Core)"
    if m.zero == 3:
        return "zero 3 (FSDP) with model.moe is not simulated (use zero <= 2)"
    return None


def _context_parallel(m: Mix, c: Context) -> str | None:
    if m.cp <= 1:
        return None
    if c.attention != "flash":
        return f"cp={m.cp} needs flash attention (model.attention is {c.attention})"
    if c.seq_len % (2 * m.cp):
        return f"cp={m.cp} needs seq_len={c.seq_len} divisible by 2*cp (zig-zag: two chunks per rank)"
    if m.sequence_parallel and m.tp > 1 and (c.seq_len // m.cp) % m.tp:
        return f"sequence parallel needs tp={m.tp} to divide the local sequence seq_len/cp={c.seq_len // m.cp}"
    if m.zero == 3:
        return f"cp={m.cp} with zero 3 is not supported (use zero <= 2)"
    return None


#: (name, check) in the order they are applied; ``memory`` and ``scenario-rules`` follow them.
STRUCTURAL = (
    ("expert-parallel", _expert_parallel),
    ("tp-divides-model", _tp_shapes),
    ("tp-in-nvlink-domain", _tp_placement),
    ("pipeline-depth", _pipeline_depth),
    ("batch-divisible", _batch),
    ("interleaved-micro-batches", _interleaved),
    ("split-schedule-needs", _split_schedule),
    ("sequence-parallel-seq-len", _sequence_parallel),
    ("zero3-with-pipeline", _fsdp_pipeline),
    ("context-parallel", _context_parallel),
)

#: what each constraint means, for ``--explain``
DESCRIPTIONS = {
    "expert-parallel": "EP divides the experts and, with expert TP, dp*tp; MoE with tp > 1 needs SP; no ZeRO-3",
    "tp-divides-model": "TP must divide heads, kv_heads and ffn_hidden (Megatron column/row split)",
    "tp-in-nvlink-domain": "TP group stays inside one node's NVLink domain (placement)",
    "pipeline-depth": "at least one layer per virtual pipeline stage",
    "batch-divisible": "global batch = micro_batch x dp x micro-batches",
    "interleaved-micro-batches": "Megatron's interleaved schedule needs micro-batches divisible by pp",
    "split-schedule-needs": "DualPipe: even pp and >= 2*pp micro-batches (even); zb_v, dualpipe_v: 2 chunks",
    "sequence-parallel-seq-len": "sequence parallel splits the sequence over TP ranks",
    "zero3-with-pipeline": "FSDP / ZeRO-3 is simulated without pipelines only",
    "context-parallel": "CP needs flash attention, a sequence in 2*cp zig-zag chunks, zero <= 2",
    "scenario-rules": "the scenario file's own validation rejected the mix",
    "memory": "peak bytes of the fullest GPU exceed its HBM capacity (TransformerStep.memory)",
}


@dataclass
class Tally:
    """How many mixes each constraint removed, with the first example of each."""

    removed: dict[str, int] = field(default_factory=dict)
    example: dict[str, tuple[Mix, str]] = field(default_factory=dict)

    def drop(self, name: str, mix: Mix, reason: str) -> None:
        """Count ``mix`` against constraint ``name``."""
        self.removed[name] = self.removed.get(name, 0) + 1
        self.example.setdefault(name, (mix, reason))

    def merge(self, other: "Tally") -> None:
        """Add another tally (from a worker process)."""
        for k, v in other.removed.items():
            self.removed[k] = self.removed.get(k, 0) + v
        for k, v in other.example.items():
            self.example.setdefault(k, v)

    def rows(self) -> list[dict]:
        """One JSON row per constraint (in check order), zero counts included."""
        names = [n for n, _ in STRUCTURAL] + ["scenario-rules", "memory"]
        out = []
        for n in names:
            ex = self.example.get(n)
            out.append({"constraint": n, "description": DESCRIPTIONS[n], "removed": self.removed.get(n, 0),
                        "example": ex[0].label() if ex else None, "reason": ex[1] if ex else None})
        return out


def structural_violation(mix: Mix, ctx: Context) -> tuple[str, str] | None:
    """``(constraint, reason)`` of the first structural rule ``mix`` breaks, else None.

    >>> ctx = Context(96, 96, 49152, 96, 2048, 1536, 8)
    >>> structural_violation(Mix(64, 16, 1, 1, 1, 1, False, 0, "1f1b", 1, "none"), ctx)[0]
    'tp-in-nvlink-domain'
    """
    for name, check in STRUCTURAL:
        reason = check(mix, ctx)
        if reason is not None:
            return name, reason
    return None
