"""The work and memory budget: bounds on every count that scales work, estimates checked before any work.

Two kinds of limit protect the user's machine from a typo (``layers: 10000000``):

- **Bounds** (:data:`BOUNDS`): each count that scales work (GPUs, nodes, layers,
  micro-batches, sizes, ...) has a hard upper bound far above any real system,
  checked when the file is validated. The message gives the bound and why.
- **The budget** (:class:`Limits`): what a valid combination of counts would cost,
  estimated from the counts before anything is built: bytes of memory
  (``--max-memory``, default 4 GiB) and simulated events (``--max-events``, default
  2 million: compute segments, schedule ops and collective calls). Anything over
  it is refused up front with the estimate, the limit and the option that raises it.

The limits travel in a :class:`contextvars.ContextVar` set by the command line
(:func:`limits`), so library calls deep below it see them without a parameter on
every signature; outside a :func:`limits` block the defaults apply. The same
inputs get the same answer on every machine (the limits do not depend on the
memory the machine has).

Examples
--------
>>> check_bound("nodes", 4)
>>> check_bound("nodes", 10**7)                       # doctest: +ELLIPSIS
Traceback (most recent call last):
...
clustersim.errors.ClusterSimError: 10,000,000 nodes exceed the bound of 1,048,576 (...)
>>> with limits(max_memory=2**20):
...     check_memory(2**21, "2 tables of 1 MiB")       # doctest: +ELLIPSIS
Traceback (most recent call last):
...
clustersim.errors.ClusterSimError: 2 tables of 1 MiB need about 2.1 MB of memory; the limit is 1 MiB (raise it with --max-memory)
"""

from __future__ import annotations

import contextlib
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Iterator

from clustersim.errors import ClusterSimError
from clustersim.units import MAX_SIZE_BYTES, GiB, MiB, format_bytes

# ---------------------------------------------------------------------------------------------
# Bounds: (largest allowed value, why). Far above any real system, low enough that work and
# float arithmetic stay finite (counts are multiplied together into FLOPs and bytes).
# ---------------------------------------------------------------------------------------------

BOUNDS: dict[str, tuple[int, str]] = {
    "gpus": (2**20, "about 10x the largest GPU clusters built, ~100,000 GPUs in 2024"),
    "nodes": (2**20, "about 10x the largest GPU clusters built, ~100,000 GPUs in 2024"),
    "node devices": (4096, "devices of one kind in one node preset; the largest NVLink domain sold has 576 GPUs"),
    "node links": (2**17, "expanded links of one node preset; a 4,096-GPU node with 18 NVLinks per GPU has ~74,000"),
    "layers": (10_000, "10x the deepest trained transformers, DeepNet's 1,000 layers"),
    "model width": (2**24, "hidden, ffn_hidden and vocab; 100x the widest published models"),
    "heads": (2**16, "attention heads; the largest published models have 128"),
    "experts": (2**16, "routed experts per MoE layer; the largest published models have 256-384"),
    "seq_len": (2**24, "16M tokens; 16x the longest published training contexts"),
    "global_batch": (2**24, "16M sequences per step; published runs use at most a few thousand"),
    "steps": (10**9, "optimizer steps to report on"),
    "iterations": (10**7, "repetitions of a generic job's phase list"),
    "repeat": (10**7, "repetitions of one phase of a generic job"),
    "study points": (100_000, "simulations of one sweep; a 10-axis study of 3 values each has 59,049"),
    "size": (MAX_SIZE_BYTES, "1 PiB in one collective or one table entry; 1,000x the HBM of a GB200 NVL72 rack"),
}

#: Integers written with more digits than this are refused while reading a file or an option,
#: before Python converts them (a 5,000-digit integer exceeds ``int``'s 4,300-digit conversion
#: limit; every bound above has at most 16 digits).
MAX_INT_DIGITS = 30

#: Largest YAML input (topology, scenario, profile): 60x the largest shipped file (69 KB profile of
#: 2026-11-25); parsing and validating 50 MB took 79 s and 2.7 GB before this limit.
MAX_YAML_BYTES = 4 * MiB

#: Largest measurement file (JSON lines, nccl-tests log): a full bench of 16 ranks writes ~2 MB.
MAX_MEASUREMENT_BYTES = 256 * MiB

#: Largest number of values in a loaded file after YAML aliases are expanded (an alias bomb of a
#: few hundred bytes can otherwise stand for 10^9 values).
MAX_YAML_VALUES = 2_000_000


def check_bound(name: str, value: int, *, field: str | None = None, file: str | None = None) -> None:
    """Raise when ``value`` exceeds the bound of ``name`` in :data:`BOUNDS`.

    >>> check_bound("layers", 96)
    """
    bound, why = BOUNDS[name]
    if value > bound:
        shown = f"{value:,}" if value < 10**15 else f"{float(value):.3g}"
        raise ClusterSimError(f"{shown} {name} exceed the bound of {bound:,} ({why})", field=field, file=file)


# ---------------------------------------------------------------------------------------------
# The budget
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Limits:
    """What one command may spend.

    Attributes
    ----------
    max_memory_bytes:
        Estimated peak memory of the structures the command builds (cluster link arrays, the
        device graph, the op schedule); default 4 GiB (a sixth of a 24 GiB workstation).
    max_events:
        Estimated simulated events (compute segments + schedule ops + collective calls); default
        2 million (the shipped 1,024-GPU GPT-3 step has ~150,000).
    """

    max_memory_bytes: int = 4 * GiB
    max_events: int = 2_000_000


_LIMITS: ContextVar[Limits] = ContextVar("clustersim_limits", default=Limits())


def current() -> Limits:
    """The limits in force (the defaults outside a :func:`limits` block)."""
    return _LIMITS.get()


@contextlib.contextmanager
def limits(max_memory: int | None = None, max_events: int | None = None) -> Iterator[Limits]:
    """Run a block under other limits (``None`` keeps the current value).

    >>> with limits(max_events=5) as lim:
    ...     lim.max_events, current().max_events
    (5, 5)
    >>> current().max_events
    2000000
    """
    cur = _LIMITS.get()
    new = Limits(max_memory_bytes=cur.max_memory_bytes if max_memory is None else int(max_memory),
                 max_events=cur.max_events if max_events is None else int(max_events))
    if new.max_memory_bytes <= 0 or new.max_events <= 0:
        raise ClusterSimError("--max-memory and --max-events must be > 0")
    token = _LIMITS.set(new)
    try:
        yield new
    finally:
        _LIMITS.reset(token)


def _decimal_bytes(n: float) -> str:
    """``9.1e9`` -> ``'9.1 GB'`` (estimates are rough: two significant digits, decimal units)."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.2g} {unit}"
    return f"{n:.0f} B"


def check_memory(estimate_bytes: float, what: str, *, field: str | None = None, file: str | None = None) -> None:
    """Refuse (ClusterSimError) when ``what`` would need more than the memory limit.

    ``what`` names the thing in the plural form the message reads with ("10,000,000 nodes").
    """
    lim = current().max_memory_bytes
    if estimate_bytes > lim:
        raise ClusterSimError(f"{what} need about {_decimal_bytes(estimate_bytes)} of memory; the limit is "
                              f"{format_bytes(lim)} (raise it with --max-memory)", field=field, file=file)


def check_events(estimate: float, what: str, *, field: str | None = None, file: str | None = None) -> None:
    """Refuse (ClusterSimError) when ``what`` would simulate more events than the limit allows."""
    lim = current().max_events
    if estimate > lim:
        raise ClusterSimError(f"{what} need about {estimate:,.0f} simulated events (compute segments, ops and "
                              f"collective calls); the limit is {lim:,} (raise it with --max-events)",
                              field=field, file=file)


# ---------------------------------------------------------------------------------------------
# Estimates. Constants measured with tracemalloc on the 2-core dev VM, 2026-11-25
# (dgx-h100-superpod at 256 and 2,048 nodes, gb200-nvl72 at 64, h100-pcie-4gpu at 1,024).
# ---------------------------------------------------------------------------------------------

#: Link arrays and names of a cluster, per link group: ~330 B measured (a name string, three
#: numpy entries, list slots) -> 400 B with margin.
BYTES_PER_LINK_GROUP = 400
#: The networkx device graph, per directed link: ~2,000 B measured (edge dicts in a MultiDiGraph,
#: nodes amortised) -> 2,400 B with margin.
BYTES_PER_GRAPH_LINK = 2_400
#: Schedule and timeline per simulated event (op records, segment tuples, timeline entries):
#: 130-950 B measured (GPT-3 175B and Llama 3 405B steps at flow fidelity) -> 500 B.
BYTES_PER_EVENT = 500
#: Segments of one transformer layer per micro-batch, forward and backward, with tensor
#: parallelism (kernels between TP collectives, the collectives, host calls): 16.5-17.2 measured
#: on the shipped GPT-3, Llama 3 and TP2xPP2xDP2 steps -> 18; full recompute adds the forward's 8.
#: Without TP a pipeline chunk is one op whatever its layer count.
TP_SEGMENTS_PER_LAYER = 18
RECOMPUTE_SEGMENTS_PER_LAYER = 8
#: One collective at flow fidelity, per rank, in events of the step's unit of cost: an all-reduce
#: on 65,536 GPUs (dgx-h100-superpod, 8,192 nodes) took 8 s, ~120 us per rank, against 6-200 us
#: per step event -> 4.
FLOW_EVENTS_PER_RANK = 4
#: ZeRO-3 (FSDP) ops of one layer per micro-batch: parameter all-gathers forward and backward,
#: gradient reduce-scatter, their waits and the three hooks that issue them on the host stream
#: (~10 measured on ref-fsdp2) -> 11.
ZERO3_OPS_PER_LAYER = 11


def cluster_bytes(nodes: int, groups_per_node: int, fabric_links: int = 0, *, graph: bool = False) -> float:
    """Estimated bytes of a cluster's link arrays (and of its device graph with ``graph=True``).

    >>> round(cluster_bytes(10_000_000, 58) / 1e9)
    232
    """
    groups = nodes * groups_per_node + fabric_links
    out = groups * BYTES_PER_LINK_GROUP
    if graph:
        out += groups * BYTES_PER_GRAPH_LINK
    return float(out)


def transformer_events(*, layers: int, micro_batches: int, pp: int, virtual_stages: int, tp: int,
                       pipelines: int, zero: int, recompute_full: bool, cp_segments: int = 0) -> float:
    """Estimated simulated events of one transformer training step.

    ``pipelines``: pipelines simulated (1 with the symmetry reduction, dp without it). Per
    micro-batch each pipeline chunk runs a forward and a backward op and hands its activations on;
    with TP every layer adds its segments; ZeRO-3 gathers and scatters every layer's parameters;
    per step each layer and chunk adds gradient buckets and optimizer ops; ``cp_segments``: the
    context-parallel collectives of one layer's forward and backward. Within 0.8-2x of the
    counted events on the shipped scenarios (tests/reliability/test_budget.py).

    >>> transformer_events(layers=96, micro_batches=96, pp=8, virtual_stages=1, tp=8, pipelines=1,
    ...                    zero=1, recompute_full=False)
    169184.0
    """
    chunks = pp * virtual_stages
    per_layer = cp_segments
    if tp > 1:
        per_layer += TP_SEGMENTS_PER_LAYER + (RECOMPUTE_SEGMENTS_PER_LAYER if recompute_full else 0)
    if zero == 3:
        per_layer += ZERO3_OPS_PER_LAYER
    per_mb = 2 * chunks + 2 * (pp - 1) * virtual_stages + layers * per_layer
    return float(pipelines * (micro_batches * per_mb + 4 * (layers + chunks)))


def job_events(*, iterations: int, phase_items: int) -> float:
    """Estimated simulated events of a generic job: ``iterations`` x the phase items of one pass.

    ``phase_items``: sum over phases of ``repeat`` x (ranks taking part, for compute and host phases;
    groups, for collectives).

    >>> job_events(iterations=10, phase_items=33)
    330.0
    """
    return float(iterations) * float(phase_items)


def events_bytes(events: float) -> float:
    """Estimated memory of the schedule and timeline of ``events`` simulated events."""
    return events * BYTES_PER_EVENT
