"""The point-to-point program of a pipeline rank: which sends and receives go out together, when, and who waits.

``torch.distributed.pipelining`` (the schedules ``reference/train_gpt.py`` runs; torch 2.11 on the lent GPUs, 2.13
here: the programs below are the same in both) issues a pipeline rank's transfers as *batches*
(``batch_isend_irecv``: one NCCL kernel per batch), in torch 2.11 all coalesced on the rank's one NCCL stream, so
a batch starts only after the previous one on that rank has finished (torch 2.13's ``_batch_p2p`` issues a batch
of only sends or only receives as plain ``isend`` / ``irecv`` instead, which this module does not model); the
stream also waits for the compute issued before the call. A batch finishes when each of its transfers
has found its peer's matching kernel. While it waits, the kernel holds its channels' thread blocks on the
SMs (``validation/probes/p2p-waiting-kernel/h100x4``: an 8192^3 GEMM runs x1.21-1.26 beside a posted receive). Where the
program waits for a batch, the compute stream waits for it (``work.wait()``), not the host.

The three schedules differ in what goes together and when it is waited for:

* ``1f1b`` (``Schedule1F1B``): a warm-up forward receives, computes, and sends its output in a batch of
  its own that it waits for only after the next forward; in the steady state the output of a forward
  goes out *with* the receive of the next backward's gradient (one batch, waited for before that
  backward) and a backward's gradient with the next forward's input; the cool-down as the warm-up.
* ``gpipe`` (``ScheduleGPipe``): every forward waits for its receive and sends without waiting; the
  first backward waits for all forward sends; the same for the backwards.
* ``interleaved`` (``ScheduleInterleaved1F1B``, ``_PipelineScheduleRuntime``): the compute-only order
  (its idle steps dropped, FSDP's UNSHARD / RESHARD and the REDUCE_GRAD actions added, each a turn) is
  lowered by ``_add_send_recv``: in lock step over the ranks, a compute action runs once its input's receive is in place, its send follows it at once, and
  the peer's matching *receive* is placed in the peer's list at the same moment -- so receives are
  posted as early as the lowering allows and waited for only by the chunk that consumes them; sends
  are never waited for inside the step.

:func:`p2p_program` returns a rank's program as events ``("compute", (kind, mb, chunk))``,
``("batch", [transfer, ...])`` and ``("wait", batch index)`` (the next compute waits for that batch);
a transfer is ``(kind, mb, sending virtual stage)``.
"""

from __future__ import annotations

from collections import deque

from clustersim.errors import ClusterSimError

#: schedules whose p2p program this module knows (the torch.distributed.pipelining ones)
P2P_SCHEDULES = ("1f1b", "gpipe", "interleaved")

Transfer = tuple[str, int, int]  # (kind F|B, micro-batch, sending virtual stage)
Event = tuple


def p2p_program(schedule: str, p: int, m: int, stage: int, order: list, v: int = 1) -> list[Event]:
    """The events of pipeline rank ``stage`` (of ``p``) for ``m`` micro-batches, ``v`` chunks per rank.

    ``order``: the rank's compute order ``[(kind, mb, chunk), ...]``
    (:func:`clustersim.workload.schedule.pipeline_order`; for ``interleaved`` every rank's order is
    needed: pass ``orders`` via :func:`interleaved_programs` instead).

    >>> for e in p2p_program("1f1b", p=2, m=2, stage=0, order=[("F", 0, 0), ("F", 1, 0), ("B", 0, 0), ("B", 1, 0)]):
    ...     print(e)
    ('compute', ('F', 0, 0))
    ('batch', [('F', 0, 0)])
    ('compute', ('F', 1, 0))
    ('wait', 0)
    ('batch', [('F', 1, 0), ('B', 0, 1)])
    ('wait', 1)
    ('compute', ('B', 0, 0))
    ('batch', [('B', 1, 1)])
    ('wait', 2)
    ('compute', ('B', 1, 0))
    """
    if schedule == "1f1b":
        events = _one_f_one_b(stage, p, m)
    elif schedule == "gpipe":
        events = _gpipe(stage, p, order)
    else:
        raise ClusterSimError(f"no p2p program for schedule {schedule!r} alone (interleaved: interleaved_programs)",
                              field="parallelism.schedule")
    computes = [e[1] for e in events if e[0] == "compute"]
    if computes != list(order):  # the program must run the model's own order
        raise ClusterSimError(f"{schedule} p2p program of rank {stage} disagrees with its compute order",
                              field="parallelism.schedule")
    return events


class _Program:
    """Events of one rank under construction."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.batches = 0

    def batch(self, transfers: list[Transfer]) -> int | None:
        if not transfers:
            return None
        self.events.append(("batch", list(transfers)))
        self.batches += 1
        return self.batches - 1

    def wait(self, batch: int | None) -> None:
        if batch is not None:
            self.events.append(("wait", batch))

    def compute(self, kind: str, mb: int, chunk: int = 0) -> None:
        self.events.append(("compute", (kind, mb, chunk)))


def _one_f_one_b(s: int, p: int, m: int) -> list[Event]:
    """``Schedule1F1B._step_microbatches`` of torch 2.11-2.13, rank ``s``."""
    prog = _Program()
    recv_f = lambda i: [("F", i, s - 1)] if s > 0 else []  # noqa: E731
    send_f = lambda i: [("F", i, s)] if s < p - 1 else []  # noqa: E731
    recv_b = lambda i: [("B", i, s + 1)] if s < p - 1 else []  # noqa: E731
    send_b = lambda i: [("B", i, s)] if s > 0 else []  # noqa: E731
    warm = min(m, p - s)
    f = b = 0
    send_work, fwd_sends, bwd_sends = None, [], []
    for i in range(warm):
        prog.wait(prog.batch(recv_f(f)))
        prog.compute("F", f)
        prog.wait(send_work)  # the previous forward's send, before anything after this forward
        send_work = None
        fwd_sends = send_f(f)
        if i != warm - 1:
            send_work = prog.batch(fwd_sends)
        f += 1
    while True:
        prog.wait(prog.batch(fwd_sends + recv_b(b)))  # the last forward's output goes with the gradient's receive
        prog.compute("B", b)
        bwd_sends = send_b(b)
        b += 1
        if f == m:
            break
        prog.wait(prog.batch(bwd_sends + recv_f(f)))
        prog.compute("F", f)
        fwd_sends = send_f(f)
        f += 1
    send_work = prog.batch(bwd_sends)
    while b < m:
        prog.wait(prog.batch(recv_b(b)))
        prog.compute("B", b)
        prog.wait(send_work)
        send_work = prog.batch(send_b(b))
        b += 1
    return prog.events


def _gpipe(s: int, p: int, order: list) -> list[Event]:
    """``ScheduleGPipe._step_microbatches``, rank ``s``, in the model's order of the micro-batches."""
    prog = _Program()
    sends: list[int | None] = []
    for kind in ("F", "B"):
        for _, mb, _ in [x for x in order if x[0] == kind]:
            if kind == "F":
                prog.wait(prog.batch([("F", mb, s - 1)] if s > 0 else []))
                prog.compute("F", mb)
                sends.append(prog.batch([("F", mb, s)] if s < p - 1 else []))
            else:
                for k in sends:  # the first backward waits for every forward send
                    prog.wait(k)
                sends = []
                prog.wait(prog.batch([("B", mb, s + 1)] if s < p - 1 else []))
                prog.compute("B", mb)
                prog.batch([("B", mb, s)] if s > 0 else [])
    return prog.events


def torch_interleaved_order(order: list, p: int, m: int, v: int, rank: int) -> list:
    """The model's interleaved order of rank ``rank`` with torch's idle steps (``None``) put back:
    ``rank`` at the start, ``p - rank`` after the warm-up forwards (fewer when the warm-up is capped),
    one before each cool-down backward (``_get_1f1b_rank_ops``).

    >>> from clustersim.workload.schedule import pipeline_order
    >>> torch_interleaved_order(pipeline_order("interleaved", 2, 2, 1, 2), 2, 2, 2, 1)
    [None, ('F', 0, 0), ('F', 1, 0), None, ('F', 0, 1), ('B', 0, 1), ('F', 1, 1), ('B', 1, 1), None, ('B', 0, 0), None, ('B', 1, 0)]
    """
    total = m * v
    warm = min((v - 1) * p + 2 * (p - 1 - rank), total)
    post = max(0, (v * p + 2 * (p - 1 - rank)) - (warm + rank))
    out: list = [None] * rank + list(order[:warm]) + [None] * post + list(order[warm:2 * total - warm])
    for x in order[2 * total - warm:]:  # the cool-down backwards, each after an idle step
        out += [None, x]
    if [x for x in out if x is not None] != list(order):
        raise ClusterSimError(f"interleaved order of rank {rank} does not have torch's shape", field="parallelism.schedule")
    return out


#: an action of the lowering's input that moves no data (UNSHARD, RESHARD, REDUCE_GRAD) but takes a lock step
_NOOP = ("X", -1, -1)


def _lowering_input(order: list, p: int, m: int, rank: int) -> list:
    """What ``_add_send_recv`` lowers for rank ``rank``: ``_add_unshard_reshard`` then ``_add_reduce_grad`` of
    the padded order -- the idle steps dropped, an UNSHARD before a stage's first action among the next three
    stages (a RESHARD where one leaves them, and for each at the end), a REDUCE_GRAD after a stage's last
    backward. Without FSDP they do nothing, but each takes a turn of the lock step (:data:`_NOOP`).

    >>> _lowering_input([None, ("F", 0, 0), ("F", 0, 1), ("B", 0, 1), ("B", 0, 0)], 2, 1, 1)
    [('X', -1, -1), ('X', -1, -1), ('F', 0, 0), ('F', 0, 1), ('B', 0, 1), ('X', -1, -1), ('X', -1, -1), ('B', 0, 0), ('X', -1, -1), ('X', -1, -1)]
    """
    acts = [a for a in order if a is not None]

    def stage(a) -> int:
        return a[2] * p + rank

    # the next occurrence of every stage at or after each position (a rank has only v stages): O(n v)
    nxt: dict[int, int] = {}
    ahead: list[dict[int, int]] = [{}] * len(acts)
    for i in range(len(acts) - 1, -1, -1):
        nxt = {**nxt, stage(acts[i]): i}
        ahead[i] = nxt
    out: list = []
    active: list[int] = []
    for i, a in enumerate(acts):
        # the next three distinct stages (max_active_stages = 3), by first occurrence
        upcoming = [st for st, _ in sorted(ahead[i].items(), key=lambda kv: kv[1])[:3]]
        for st in [x for x in active if x not in upcoming]:
            active.remove(st)
            out.append(_NOOP)
        for st in [x for x in upcoming if x not in active]:
            active.append(st)
            out.append(_NOOP)
        out.append(a)
    out += [_NOOP] * len(active)
    done: dict[int, int] = {}
    final: list = []
    for a in out:
        final.append(a)
        if a != _NOOP and a[0] == "B":
            done[stage(a)] = done.get(stage(a), 0) + 1
            if done[stage(a)] == m:
                final.append(_NOOP)
    return final


def interleaved_programs(orders: list[list], p: int, m: int, v: int) -> list[list[Event]]:
    """Every rank's program under ``ScheduleInterleaved1F1B`` (``_add_send_recv`` lowering).

    ``orders[r]``: rank ``r``'s compute order (chunk ``c`` of rank ``r`` is virtual stage ``c * p + r``).

    >>> from clustersim.workload.schedule import pipeline_order
    >>> progs = interleaved_programs([pipeline_order("interleaved", 2, 2, r, 2) for r in range(2)], 2, 2, 2)
    >>> progs[1][:4]
    [('batch', [('F', 0, 0)]), ('wait', 0), ('compute', ('F', 0, 0)), ('batch', [('F', 0, 1)])]
    """
    n = p * v
    queues = {r: deque(_lowering_input(torch_interleaved_order(orders[r], p, m, v, r), p, m, r)) for r in range(p)}
    comm: dict[int, list] = {r: [] for r in range(p)}
    done: dict[int, set] = {r: set() for r in range(p)}

    def vs(rank: int, chunk: int) -> int:
        return chunk * p + rank

    def ready(rank: int, a) -> bool:
        if a == _NOOP:
            return True
        kind, mb, chunk = a
        s = vs(rank, chunk)
        if kind == "F" and s != 0:
            return ("RECV_F", s, mb) in done[rank]
        if kind == "B" and s != n - 1:
            return ("RECV_B", s, mb) in done[rank]
        return True

    while queues:
        progress = False
        for r in sorted(queues):
            a = queues[r][0]
            if a is not None and not ready(r, a):
                continue
            if a is not None and a != _NOOP:
                kind, mb, chunk = a
                s = vs(r, chunk)
                comm[r].append(("COMPUTE", a))
                done[r].add((kind, s, mb))
                dst = s + 1 if kind == "F" else s - 1
                if 0 <= dst < n:
                    comm[r].append(("SEND", (kind, mb, s)))
                    comm[dst % p].append(("RECV", (kind, mb, s)))
                    done[dst % p].add(("RECV_" + kind, dst, mb))
            queues[r].popleft()
            if not queues[r]:
                del queues[r]
            progress = True
        if not progress:
            raise ClusterSimError("interleaved schedule: sends and receives cannot be placed", field="parallelism.schedule")
    programs = []
    for r in range(p):
        prog, recv_of = _Program(), {}
        for what, x in comm[r]:
            if what == "COMPUTE":
                kind, mb, chunk = x
                prog.wait(recv_of.pop((kind, mb, vs(r, chunk)), None))
                prog.compute(kind, mb, chunk)
            elif what == "SEND":
                prog.batch([x])
            else:  # a receive: waited for by the chunk that consumes it
                kind, mb, src = x
                recv_of[(kind, mb, src + 1 if kind == "F" else src - 1)] = prog.batch([x])
        programs.append(prog.events)
    return programs
