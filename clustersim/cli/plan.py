"""``clustersim plan``: search parallel configurations of a scenario and rank them by predicted step time."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from clustersim.cli.common import console, print_json
from clustersim.errors import ClusterSimError


def _int_list(text: Optional[str], flag: str) -> Optional[list[int]]:
    if text is None:
        return None
    try:
        vals = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ClusterSimError(f"{flag} takes comma-separated integers, not {text!r}", field=flag) from None
    if not vals or min(vals) < 1:
        raise ClusterSimError(f"{flag} needs positive integers", field=flag)
    return vals


def _str_list(text: Optional[str], flag: str, allowed: tuple[str, ...]) -> Optional[list[str]]:
    if text is None:
        return None
    vals = [x.strip() for x in text.split(",") if x.strip()]
    bad = [v for v in vals if v not in allowed]
    if bad or not vals:
        raise ClusterSimError(f"{', '.join(bad) or 'nothing given'} not in {', '.join(allowed)}", field=flag)
    return vals


def _space(tp: Optional[str], pp: Optional[str], micro_batch: Optional[str], zero: Optional[str],
           schedule: Optional[str], recompute: Optional[str]):
    """The search space the options restrict (each left out: the planner's default)."""
    from clustersim.plan.space import SCHEDULES, SpaceOptions

    space = SpaceOptions(tp=_int_list(tp, "--tp"), pp=_int_list(pp, "--pp"))
    if micro_batch is not None:
        space.micro_batch = _int_list(micro_batch, "--micro-batch")
    if zero is not None:
        space.zero = [int(z) for z in _str_list(zero, "--zero", ("0", "1", "2", "3"))]
    if schedule is not None:
        space.schedule = _str_list(schedule, "--schedule", SCHEDULES)
    if recompute is not None:
        space.recompute = _str_list(recompute, "--recompute", ("none", "selective", "full"))
    return space


def render_plan(run, top: int, explain: bool) -> None:
    """The planning run as tables: the funnel, the best plans, the constraints, --why and --write-best."""
    from rich.table import Table

    from clustersim.units import format_time

    d = run.report.to_dict(top=top)
    console.print(f"{d['scenario']} on {d['n_gpus']} GPUs: {d['evaluated']:,} mixes, {d['feasible']:,} feasible, "
                  f"{d['simulated']:,} simulated (analytical), {d['pruned_by_bound']:,} skipped by the step-time "
                  f"bound, top {d['flow_reranked']} re-ranked at flow; {d['wall_s']:.1f} s", highlight=False)
    from rich import box

    short = {"interleaved": "interl", "selective": "sel", "dualpipe_v": "dualpv"}
    t = Table(title="best plans", box=box.SIMPLE_HEAD, pad_edge=False)
    # ep and cp columns only where a listed plan uses them (a dense model's table keeps its shape)
    extra = [k for k in ("ep", "cp") if any(p[k] > 1 for p in d["plans"])]
    degrees = "/".join(["tp", "pp", "dp", *extra, "v"])
    for col, just in (("#", "right"), (degrees, "right"), ("sp", "left"), ("z", "right"),
                      ("sched", "left"), ("mb", "right"), ("recomp", "left"), ("step", "right"),
                      ("MFU", "right"), ("GiB", "right"), ("+-", "right"), ("", "left")):
        t.add_column(col, justify=just, no_wrap=True)
    for i, p in enumerate(d["plans"], 1):
        step = format_time(p["step_time_s"]) + ("*" if p["fidelity"] == "flow" else "")
        t.add_row(str(i), "/".join(str(p[k]) for k in ["tp", "pp", "dp", *extra, "virtual_stages"]),
                  "y" if p["sequence_parallel"] else "n", str(p["zero"]), short.get(p["schedule"], p["schedule"]),
                  str(p["micro_batch"]), short.get(p["recompute"], p["recompute"]), step, f"{100 * p['mfu']:.1f}%" if p["mfu"] is not None else "-",
                  f"{p['peak_bytes_per_gpu'] / 2**30:.1f}", f"{100 * p['evidence'].get('half_width', 0):.0f}%",
                  "~" if i > 1 and not p["distinguishable_from_best"] else "")
    console.print(t)
    console.print(("ep: expert parallel (within dp*tp); " if "ep" in extra else "")
                  + ("cp: context parallel; " if "cp" in extra else "")
                  + "v: virtual stages; sp: sequence parallel; z: ZeRO stage; mb: micro-batch; GiB: peak per GPU; "
                  "*: step time at flow fidelity (the rest analytical); +-: the evidence band; "
                  "~: not distinguishable from #1 (the bands overlap).", highlight=False)
    if d["plans"]:
        console.print("Placement: " + d["plans"][0]["placement"], highlight=False)
        console.print(f"#1 {d['plans'][0]['evidence'].get('summary', '')}", highlight=False)
        swap = next(((i, p["could_swap_with_best"]) for i, p in enumerate(d["plans"][1:], 2) if p["could_swap_with_best"]), None)
        top = (d["plans"][0]["evidence"].get("sensitivity") or [None])[0]
        if top:
            console.print(f"the input that moves #1 most: {top['entry']} ({100 * top['share']:.0f}% of the step, "
                          f"held-out error {100 * top['error']:.1f}%)", highlight=False)
        if swap:
            console.print(f"#{swap[0]} could beat #1 if {swap[1]} were off by its held-out error", highlight=False)
    if explain:
        ct = Table(title="constraints (a mix counts against the first it breaks)", width=80)
        ct.add_column("constraint", no_wrap=True)
        ct.add_column("removed", justify="right")
        ct.add_column("example and reason")
        for row in d["constraints"]:
            ex = f"{row['example']}: {row['reason']}" if row["example"] else ""
            ct.add_row(row["constraint"], f"{row['removed']:,}", ex)
        console.print(ct)
    if run.why is not None:
        verdict = f"dropped by {run.why['constraint']}: {run.why['reason']}" if run.why["dropped"] else "feasible"
        console.print(f"{run.why['label']}: {verdict}", highlight=False)
    if run.write_best is not None:
        console.print(f"best plan written to {run.write_best} (clustersim run {run.write_best})" if run.written
                      else "no feasible plan: nothing written", highlight=False)


def register(root: typer.Typer) -> None:
    """Attach ``plan`` to the root app."""

    @root.command("plan")
    def plan_cmd(
        scenario: Path = typer.Argument(..., help="Scenario YAML file: its model, global batch and cluster are planned."),
        gpus: Optional[int] = typer.Option(None, "--gpus", help="Plan for the first N GPUs of the topology (cluster.gpus)."),
        top: int = typer.Option(10, "--top", help="Plans to list."),
        flow_top: int = typer.Option(5, "--flow-top", help="Best analytical plans re-simulated at flow fidelity (0: none)."),
        explain: bool = typer.Option(False, "--explain", help="List each constraint, how many mixes it removed and an example."),
        why: Optional[str] = typer.Option(None, "--why", help="Say why one mix is dropped or feasible: 'tp=16,pp=4,micro_batch=2'."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON document."),
        write_best: Optional[Path] = typer.Option(None, "--write-best", help="Write the winner as a scenario file for clustersim run."),
        set_: Optional[list[str]] = typer.Option(None, "--set", help="Override a scenario field first (repeatable)."),
        tp: Optional[str] = typer.Option(None, "--tp", help="Restrict TP degrees: 1,2,4,8."),
        pp: Optional[str] = typer.Option(None, "--pp", help="Restrict pipeline degrees."),
        micro_batch: Optional[str] = typer.Option(None, "--micro-batch", help="Micro-batch sizes to try (default 1,2,4,8)."),
        zero: Optional[str] = typer.Option(None, "--zero", help="ZeRO stages to try (default 0,1,2,3)."),
        schedule: Optional[str] = typer.Option(None, "--schedule", help="Schedules: gpipe,1f1b,interleaved,zb_h1,zb_v,dualpipe,dualpipe_v."),
        recompute: Optional[str] = typer.Option(None, "--recompute", help="Recompute policies: none,selective,full."),
        tp_across_nodes: bool = typer.Option(False, "--tp-across-nodes", help="Allow TP groups larger than one node."),
        exhaustive: bool = typer.Option(False, "--exhaustive", help="Simulate every feasible mix (no bound pruning)."),
        workers: int = typer.Option(2, "--workers", help="Worker processes."),
    ) -> None:
        """Enumerate dp/tp/pp/virtual stages/sequence parallel/ZeRO/schedule/micro-batch/recompute
        mixes, drop those that break a rule or do not fit memory, rank the rest by analytical step
        time (a lower bound skips mixes that cannot enter the top) and re-rank the top at flow.

        Examples:

          clustersim plan scenarios/gpt3-175b.yaml --top 5

          clustersim plan scenarios/gpt3-175b.yaml --explain --why tp=16,pp=8

          clustersim plan scenarios/ref-tp2.yaml --json --write-best best.yaml

          clustersim run best.yaml --json
        """
        from clustersim.plan import PlanOptions
        from clustersim.plan.explain import plan_run

        overrides = list(set_ or [])
        if gpus is not None:
            overrides.append(f"cluster.gpus={gpus}")
        if top < 1 or flow_top < 0 or workers < 1:
            raise ClusterSimError("--top and --workers must be >= 1, --flow-top >= 0", field="--top")
        opts = PlanOptions(top=top, flow_top=flow_top, space=_space(tp, pp, micro_batch, zero, schedule, recompute),
                           tp_across_nodes=tp_across_nodes, workers=workers, exhaustive=exhaustive)
        run = plan_run(scenario, overrides=overrides, options=opts, why=why, write_best=write_best)
        if as_json:
            print_json(run.to_dict(top=top))
            return
        render_plan(run, top, explain)
