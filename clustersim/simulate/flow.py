"""Flow execution of an op DAG: every op a process on the engine's SimPy clock, collectives as
flows on the fabric.

Each op becomes one process that waits for its dependencies (stream order is already a
dependency, so a stream is the chain of its ops), then runs: compute as a timeout, a collective
through :meth:`clustersim.engine.Simulation.collective` (all its identical groups at once, so
their traffic shares links max-min fairly), and compute ops with inner tensor-parallel
collectives segment by segment. Inner TP collectives whose links no other simulated traffic
touches ("private") take their closed-form time: uncontended flow time equals the analytical
time (Contract 2), and skipping them removes tens of thousands of events per step.

This executor lives here, above the workload, because it reads workload ops; the engine stays
the generic layer (clock, flows, collectives as processes) and is reached through ``sim.env``
and ``sim.collective`` only.
"""

from __future__ import annotations

from clustersim.breakdown import inner_comm_part
from clustersim.simulate.execute import Timeline, host_issue
from clustersim.workload.ops import Graph
from clustersim.workload.segments import ComputeSegment, overlapped_pair, segment_time


def _play_segments(env, op, comm_time, private_tp: bool, coll_events, credit: float = 0.0):
    """Play a compute op's segments (a SimPy generator); return its parts (compute, exposed comm_tp and comm_ep).

    Compute and private TP collectives (closed-form time) merge into one timeout; a shared TP
    collective flushes that timeout and runs as flows, beside its overlapped GEMM if any.
    ``credit``: seconds the op's compute runs shorter (a faster sustained clock), taken off its
    merged timeouts in order.
    """
    credit = max(0.0, credit)
    comp = -credit  # the compute part is net of the credit taken
    comm: dict[str, float] = {}  # exposed seconds per breakdown key (comm_tp, comm_ep)
    acc = 0.0  # compute and private collectives not yet waited for
    for seg in op.segments:
        if isinstance(seg, ComputeSegment) or private_tp:
            busy, hidden, exposed = segment_time(seg, comm_time)
            acc += busy
            comp += hidden
            if exposed:
                key = inner_comm_part(seg.coll.axis)
                comm[key] = comm.get(key, 0.0) + exposed
            continue
        if acc > 0:
            take = min(credit, acc)
            credit -= take
            if acc - take > 0:
                yield env.timeout(acc - take)
            acc = 0.0
        t1 = env.now
        hide = seg.overlapped_gemm_s  # a GEMM running beside it (TP overlap)
        yield env.all_of(coll_events(seg.coll, op.name))
        if hide > 0:  # the pair with the collective's flow time, as segment_time (overlapped_pair)
            ran = env.now - t1
            total = overlapped_pair(ran, hide, seg.comm_slowdown, seg.gemm_slowdown)
            if total > ran:
                yield env.timeout(total - ran)
        comp += hide
        key = inner_comm_part(seg.coll.axis)
        comm[key] = comm.get(key, 0.0) + env.now - t1 - hide
    if acc > 0:
        take = min(credit, acc)
        credit -= take
        if acc - take > 0:
            yield env.timeout(acc - take)
    comp += credit  # what could not be taken (no compute left to shorten) is not a saving
    parts = {"compute": comp}
    parts.update({k: v for k, v in comm.items() if v})
    return parts


def execute_flow(sim, graph: Graph, comm_time, private_tp: bool = True,
                 stretch: dict[int, float] | None = None) -> Timeline:
    """Run ``graph`` on ``sim`` (a :class:`clustersim.engine.Simulation`); return a Timeline.

    Parameters
    ----------
    sim: object with ``env`` (a ``simpy.Environment``) and ``collective(op, ranks, size_bytes, tag=)``.
    graph: :class:`clustersim.workload.ops.Graph`.
    comm_time: closed-form time of a :class:`~clustersim.workload.ops.Coll` (used for private TP).
    private_tp: take the closed form for inner TP collectives.
    stretch: extra busy seconds per op id (compute and collectives slowing each other where they
        overlap, :func:`clustersim.simulate.overlap.overlap_stretch`): a collective holds its
        stream that much longer after its flows end, a compute op computes that much longer.
    """
    stretch = stretch or {}
    issue = host_issue(graph)

    env = sim.env
    n = len(graph.ops)
    start = [0.0] * n
    end = [0.0] * n
    parts: list[dict[str, float]] = [{} for _ in range(n)]
    done = [env.event() for _ in range(n)]

    def coll_events(coll, name):
        return [sim.collective(coll.op, list(g), int(coll.size_bytes), algorithm=coll.algorithm,
                               protocol=coll.protocol, tag={"group": coll.axis, "name": name, "bytes": coll.size_bytes})
                for g in coll.groups]

    def run(op):
        if op.deps:
            pend = [done[d] for d in op.deps if not done[d].triggered]
            if pend:
                yield env.all_of(pend)
        t0 = env.now
        start[op.id] = t0
        win = issue.get(op.id)
        if win is not None and op.coll is None and win[0] > t0:
            yield env.timeout(win[0] - t0)  # the host has not issued it yet
        extra = stretch.get(op.id, 0.0)
        if op.coll is not None:
            if op.coll.size_bytes > 0 or op.coll.op == "barrier":
                yield env.all_of(coll_events(op.coll, op.name))
            if extra:
                yield env.timeout(extra)
            parts[op.id] = {op.category: env.now - t0}
        elif op.segments is None:
            if op.duration + extra > 0:
                yield env.timeout(op.duration + extra)
            parts[op.id] = {op.category: op.duration + extra}
            if win is not None and env.now < win[1]:
                yield env.timeout(win[1] - env.now)
        else:
            parts[op.id] = yield from _play_segments(env, op, comm_time, private_tp, coll_events,
                                                     credit=-extra if extra < 0 else 0.0)
            if extra > 0:
                yield env.timeout(extra)
                parts[op.id]["compute"] = parts[op.id].get("compute", 0.0) + extra
            if win is not None and env.now < win[1]:
                yield env.timeout(win[1] - env.now)  # the GPU waits for the last calls
        if op.coll is None and win is not None:
            busy = sum(parts[op.id].values())
            host = (env.now - t0) - busy
            if host > 1e-15:
                parts[op.id]["host"] = parts[op.id].get("host", 0.0) + host
        end[op.id] = env.now
        done[op.id].succeed()

    for op in graph.ops:
        env.process(run(op))
    env.run()
    return Timeline(start, end, parts)
