"""One planning run with what ``clustersim plan`` adds to it: why one mix is dropped, the winner written.

:func:`plan_run` runs :func:`~clustersim.plan.search.plan`, then, when asked, says why a mix given
as text (``"tp=16,pp=4,micro_batch=2"``, on top of the scenario's own parallelism and training
fields) is dropped or feasible (:func:`why_row`), and writes the best plan as a scenario file
(:func:`~clustersim.plan.write.write_best`). :class:`PlanRun` holds the three and the ``--json``
document.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from clustersim.errors import ClusterSimError
from clustersim.files import check_writable
from clustersim.plan.result import PlanReport
from clustersim.plan.search import PlanOptions, plan, why_dropped
from clustersim.plan.evaluate import Evaluator
from clustersim.plan.space import SCHEDULES, Mix
from clustersim.plan.write import write_best as _write_best

#: recompute policies a mix may name (``training.recompute``)
RECOMPUTE = ("none", "selective", "full")
#: the fields a mix is given by (``--why``)
MIX_KEYS = ("dp", "tp", "pp", "virtual_stages", "ep", "cp", "sequence_parallel", "zero", "schedule",
            "micro_batch", "recompute")


def mix_from_text(text: str, base, n_gpus: int) -> Mix:
    """``tp=8,pp=8,...`` on top of the scenario ``base``'s own parallelism and training fields.

    ``dp``, unless given, fills the ``n_gpus`` GPUs.

    >>> from types import SimpleNamespace as NS
    >>> base = NS(parallelism=NS(dp=8, tp=1, pp=1, virtual_stages=1, ep=1, cp=1, sequence_parallel=False,
    ...                          zero=1, schedule="1f1b"), training=NS(micro_batch=1, recompute="none"))
    >>> mix_from_text("tp=2,pp=2,recompute=full", base, 8).label()
    'tp2 pp2 dp2 v1 nosp z1 1f1b mb1 rc=full'
    """
    par, tr = base.parallelism, base.training
    d = {"dp": par.dp, "tp": par.tp, "pp": par.pp, "virtual_stages": par.virtual_stages, "ep": par.ep,
         "cp": par.cp, "sequence_parallel": par.sequence_parallel, "zero": par.zero, "schedule": par.schedule,
         "micro_batch": tr.micro_batch, "recompute": tr.recompute}
    given = set()
    for item in text.replace(" ", ",").split(","):
        if not item:
            continue
        k, sep, v = item.partition("=")
        if not sep or k not in MIX_KEYS:
            raise ClusterSimError(f"{item!r} is not key=value with key one of {', '.join(MIX_KEYS)}", field="--why")
        given.add(k)
        if k in ("schedule", "recompute"):
            allowed = SCHEDULES if k == "schedule" else RECOMPUTE
            if v not in allowed:
                raise ClusterSimError(f"{k}={v!r} is not one of {', '.join(allowed)}", field="--why")
            d[k] = v
        elif k == "sequence_parallel":
            if v.lower() not in ("1", "true", "yes", "on", "0", "false", "no", "off"):
                raise ClusterSimError(f"sequence_parallel needs true or false, not {v!r}", field="--why")
            d[k] = v.lower() in ("1", "true", "yes", "on")
        else:
            try:
                d[k] = int(v)
            except ValueError:
                raise ClusterSimError(f"{k} needs an integer, not {v!r}", field="--why") from None
            if d[k] < (0 if k == "zero" else 1) or (k == "zero" and d[k] > 3):
                raise ClusterSimError(f"{k}={d[k]} is out of range "
                                      f"({'0..3' if k == 'zero' else 'a positive integer'})", field="--why")
    if "dp" not in given:
        d["dp"] = max(1, n_gpus // (d["tp"] * d["pp"] * d["cp"]))  # ep is carved out of dp*tp
    return Mix(**d)


def why_row(report: PlanReport, text: str, tp_across_nodes: bool = False) -> dict:
    """Why the mix ``text`` is dropped from the space ``report`` searched, or that it is feasible.

    Returns the ``why`` entry of the ``--json`` document: ``mix``, ``label``, ``dropped``, and the
    ``constraint`` and ``reason`` that remove it (None when it is feasible).
    """
    ev = report.evaluator
    mix = mix_from_text(text, ev.base, ev.n_gpus)
    res = why_dropped(ev.rs, mix, tp_across_nodes=tp_across_nodes)
    return {"mix": mix.as_dict(), "label": mix.label(), "dropped": res is not None,
            "constraint": res[0] if res else None, "reason": res[1] if res else None}


@dataclass
class PlanRun:
    """A planning run with the answers to ``--why`` and ``--write-best``.

    ``why``: :func:`why_row`'s entry, or None when not asked. ``write_best``: the file asked for,
    ``written``: the file written (None when asked but no plan was feasible).
    """

    report: PlanReport
    why: dict | None = None
    write_best: Path | None = None
    written: Path | None = None

    def to_dict(self, top: int | None = None) -> dict:
        """The ``plan --json`` document: the report's (``top`` plans), then ``why`` and ``written`` when asked."""
        d = self.report.to_dict(top=top)
        if self.why is not None:
            d["why"] = self.why
        if self.write_best is not None:
            d["written"] = str(self.write_best) if self.written is not None else None
        return d


def plan_run(source, overrides: list[str] | None = None, options: PlanOptions | None = None, *,
             why: str | None = None, write_best: str | Path | None = None) -> PlanRun:
    """Plan ``source`` (:func:`~clustersim.plan.search.plan`), explain the mix ``why``, write the winner to ``write_best``
    (checked to be writable before planning).

    ``why`` is read before the search (a typo is refused at once, exit code 2, without costing the
    search); docs/python-api.md plans a scenario this way.
    """
    opts = options or PlanOptions()
    if write_best is not None:
        check_writable(write_best)
    ev = Evaluator(source, overrides)  # the scenario read once: the text of --why is checked against it
    if why is not None:
        mix_from_text(why, ev.base, ev.n_gpus)
    rep = plan(ev.rs, options=opts)
    row = why_row(rep, why, tp_across_nodes=opts.tp_across_nodes) if why is not None else None
    written = None
    if write_best is not None and rep.plans:
        written = _write_best(write_best, rep.evaluator, rep.plans[0])
    return PlanRun(report=rep, why=row, write_best=Path(write_best) if write_best is not None else None,
                   written=written)
