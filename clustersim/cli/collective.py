"""`clustersim collective`: predicted cost of one NCCL collective (analytical or flow fidelity)."""

from __future__ import annotations

from pathlib import Path

import typer

from clustersim.cli.common import max_events_option, max_memory_option
from clustersim.errors import ClusterSimError

app = typer.Typer(help="collective commands.", no_args_is_help=True, add_completion=False)

_HELP = """Predict the NCCL-level time of a collective (what nccl-tests measures).

Sizes follow nccl-tests: all_gather/reduce_scatter = whole all-rank buffer, all_to_all = each
rank's send buffer, send_recv = bytes each rank sends. busbw uses nccl-tests' factors.

Examples:

  clustersim collective all_reduce --topology hgx-h200 --gpus 2 --sizes 1MiB:4GiB

With a calibrated profile entry that has confidence intervals, the table shows the 95% band and
--json adds time_lo_s / time_hi_s.

  clustersim collective all_reduce --topology dgx-h100 --size 4GiB --algorithm ring --nvls off --json

  clustersim collective all_reduce --topology dgx-h100-superpod --nodes 128 --size 1GiB --fidelity flow

  clustersim collective all_reduce --topology hgx-h200 --gpus 2 --sizes 8:4GiB --plot bw.png --measured nt_all_reduce.txt
"""


def _onoff(value: str | None, name: str) -> bool | None:
    if value is None:
        return None
    v = value.strip().lower()
    if v in ("on", "true", "1", "yes"):
        return True
    if v in ("off", "false", "0", "no"):
        return False
    raise ClusterSimError(f"--{name} must be on or off, got {value!r}", field=name)


def run_collective_command(op: str, topology: str, gpus: int | None, nodes: int | None, size: str | None,
                           sizes: str | None, algorithm: str, protocol: str, nvls: str | None, p2p: str,
                           gdr: str, profile: str | None, fidelity: str) -> list[dict]:
    """The library side of the command: one result dict per size."""
    from clustersim.collectives import CollectiveModel, load_profile_for
    from clustersim.collectives.formulas import check_op
    from clustersim.topology import load_cluster
    from clustersim.units import parse_size, parse_size_range

    check_op(op)
    if op == "barrier":
        # a barrier moves no data: a size would be silently dropped, so only 0 (or none) is accepted
        if sizes is not None or (size is not None and parse_size(size) != 0):
            raise ClusterSimError("a barrier moves no data; leave out --size and --sizes", field="size")
        size = "0"
    if (size is None) == (sizes is None):
        raise ClusterSimError("give exactly one of --size S or --sizes START:END[:xF]", field="size")
    if gpus is not None and nodes is not None:
        raise ClusterSimError("give --gpus or --nodes, not both", field="gpus")
    if fidelity not in ("analytical", "flow"):
        raise ClusterSimError(f"--fidelity must be analytical or flow, got {fidelity!r}", field="fidelity")
    size_list = [parse_size(size)] if size is not None else parse_size_range(sizes)
    cluster = load_cluster(topology, nodes=nodes, gpus=gpus)
    if fidelity == "flow":
        from clustersim.budget import FLOW_EVENTS_PER_RANK, check_events

        # each size is one discrete-event simulation whose flows grow with the ranks
        check_events(len(size_list) * cluster.n_gpus * FLOW_EVENTS_PER_RANK,
                     f"{len(size_list)} size(s) at flow fidelity on {cluster.n_gpus:,} GPUs", field="sizes")
    prof = load_profile_for(cluster, profile)
    kw = dict(nvls=_onoff(nvls, "nvls"), p2p=_onoff(p2p, "p2p"), gdr=_onoff(gdr, "gdr"))
    n = cluster.n_gpus
    out = []
    m = None
    if fidelity == "analytical":
        m = CollectiveModel(cluster, prof, **kw)
        results = [m.estimate(op, n, s, algorithm, protocol) for s in size_list]
    else:
        from clustersim.collectives.flow import flow_simulation

        results = []
        for s in size_list:
            sim = flow_simulation(cluster, prof, **kw)
            p = sim.collective(op, n, s, algorithm=algorithm, protocol=protocol)
            sim.env.run()
            results.append(p.value)
    band_model = m if fidelity == "analytical" else CollectiveModel(cluster, prof, **kw)
    for s, r in zip(size_list, results):
        d = r.to_dict()
        d.update(topology=cluster.name, fidelity=fidelity, profile=prof.name if prof is not None else None)
        if r.source == "profile":
            band = _band(band_model, op, n, s, algorithm, protocol, r.time_s)
            if band is not None:
                d["time_lo_s"], d["time_hi_s"] = band
        out.append(d)
    return out


def _band(model, op: str, n: int, size: float, algorithm: str, protocol: str,
          time_s: float) -> tuple[float, float] | None:
    """95% band (lo, hi) in seconds around ``time_s`` from the CIs of the profile entry used, or None.

    The band of the entry's line (:func:`clustersim.collectives.uncertainty.predict`) is moved onto the
    reported time (which adds the kernel gap to the entry, and at flow fidelity is the simulated time).
    """
    from clustersim.collectives.uncertainty import predict
    from clustersim.collectives.model import normalise_algorithm

    rk = model.ranks_of(n)
    hit = model.match_entry(op, normalise_algorithm(algorithm), (protocol or "auto").strip().lower(), len(rk),
                            model.context(rk).scope, float(size))
    if hit is None:
        return None
    entry, seg = hit
    if seg.alpha_ci_us is None and seg.algbw_ci_GBps is None:
        return None
    t, lo, hi = predict(entry, float(size))
    return max(0.0, time_s - (t - lo)), time_s + (hi - t)


def _table(rows: list[dict]) -> None:
    from rich.table import Table

    from clustersim.cli.common import console

    t = Table(title=f"{rows[0]['op']} on {rows[0]['topology']}: {rows[0]['gpus']} GPUs, "
              f"{rows[0]['nodes']} node(s), {rows[0]['fidelity']}")
    banded = any("time_lo_s" in r for r in rows)
    cols = ["size (B)", "count", "type", "time (us)"] + (["95% band (us)"] if banded else []) + \
        ["algbw (GB/s)", "busbw (GB/s)", "algorithm", "protocol"]
    for col in cols:
        t.add_column(col, justify="right" if col not in ("type", "algorithm", "protocol") else "left", no_wrap=True)
    for r in rows:
        count = r["size_bytes"] // 4
        if r["op"] in ("all_gather", "reduce_scatter", "all_to_all", "gather", "scatter"):
            count //= max(1, r["gpus"])  # nccl-tests prints the per-rank count
        band = ([f"{r['time_lo_s'] * 1e6:.2f} - {r['time_hi_s'] * 1e6:.2f}" if "time_lo_s" in r else "-"]
                if banded else [])
        t.add_row(str(r["size_bytes"]), str(count), "float", f"{r['time_us']:.2f}", *band, f"{r['algbw_GBps']:.2f}",
                  f"{r['busbw_GBps']:.2f}", r["algorithm"], r["protocol"])
    from rich.console import Console

    Console(width=max(console.width, 130)).print(t)


def _measured(path: str) -> list[tuple[int, float]]:
    try:
        from clustersim.calibration.nccl_tests import parse_nccl_tests_log
    except ImportError:  # pragma: no cover - the calibration package ships with clustersim
        raise ClusterSimError("cannot read nccl-tests logs (clustersim.calibration missing)") from None
    rows = [r for r in parse_nccl_tests_log(path) if r.get("kind") == "collective" and not r.get("inplace")]
    if not rows:
        raise ClusterSimError("no nccl-tests result lines found", file=path)
    return [(int(r["size_bytes"]), float(r["busbw_GBps"])) for r in rows]


def plot_busbw(rows: list[dict], path: str, measured: str | None = None) -> Path:
    """busbw against size (log x), optionally with a measured nccl-tests log overlaid."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    ax.plot([r["size_bytes"] for r in rows], [r["busbw_GBps"] for r in rows], "o-", ms=3,
            label=f"clustersim ({rows[0]['fidelity']})")
    if measured:
        pts = _measured(measured)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "s--", ms=3, label=f"measured: {Path(measured).name}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("size (bytes)")
    ax.set_ylabel("busbw (GB/s)")
    ax.set_title(f"{rows[0]['op']} on {rows[0]['topology']}, {rows[0]['gpus']} GPUs")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    out = Path(path)
    if out.parent and not out.parent.exists():
        raise ClusterSimError("folder does not exist", file=str(out.parent))
    try:
        fig.savefig(out, dpi=120)
    except (OSError, ValueError) as exc:  # read-only folder, full disk, unknown image suffix
        raise ClusterSimError(f"cannot write the plot: {getattr(exc, 'strerror', None) or exc}", file=str(out)) from None
    finally:
        plt.close(fig)
    return out


def register(root: typer.Typer) -> None:
    """Attach this module's commands to the root app."""

    @root.command("collective", help=_HELP, no_args_is_help=True)
    def collective(
        op: str = typer.Argument(..., help="broadcast, reduce, all_reduce, all_gather, reduce_scatter, all_to_all, "
                                           "scatter, gather, send_recv, barrier"),
        topology: str = typer.Option(..., "--topology", "-t", help="Shipped topology name or YAML path."),
        gpus: int = typer.Option(None, "--gpus", help="Use the topology's first N GPUs."),
        nodes: int = typer.Option(None, "--nodes", help="Replicate the node N times (all their GPUs)."),
        size: str = typer.Option(None, "--size", help="One size: 4096, 256MiB, 1GiB."),
        sizes: str = typer.Option(None, "--sizes", help="Sweep START:END[:xF] (factor 2 by default)."),
        algorithm: str = typer.Option("auto", "--algorithm", help="auto, ring, tree, nvls, nvls_tree, "
                                      "halving_doubling, hierarchical, direct, pairwise, p2p."),
        protocol: str = typer.Option("auto", "--protocol", help="auto, ll, ll128, simple."),
        nvls: str = typer.Option(None, "--nvls", help="on/off: NVLink SHARP (default: the profile's)."),
        p2p: str = typer.Option("on", "--p2p", help="on/off: GPU peer-to-peer (off: stage through host memory)."),
        gdr: str = typer.Option("on", "--gdr", help="on/off: GPUDirect RDMA (off: NIC uses host bounce buffers)."),
        profile: str = typer.Option(None, "--profile", help="Calibration profile name or YAML (default: the topology's)."),
        fidelity: str = typer.Option("analytical", "--fidelity", help="analytical or flow."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON document."),
        plot: str = typer.Option(None, "--plot", help="Write busbw vs size to this PNG."),
        measured: str = typer.Option(None, "--measured", help="nccl-tests log to overlay on --plot."),
        max_memory: str = max_memory_option(),
        max_events: int = max_events_option(),
    ) -> None:
        from clustersim.cli.common import budget, console, print_json, progress

        if measured and not plot:
            raise ClusterSimError("--measured needs --plot FILE.png", field="measured")
        with budget(max_memory, max_events), progress(f"{op} on {topology} ({fidelity})"):
            rows = run_collective_command(op, topology, gpus, nodes, size, sizes, algorithm, protocol, nvls, p2p,
                                          gdr, profile, fidelity)
            if plot:
                plot_busbw(rows, plot, measured)
        if as_json:
            print_json(rows[0] if size is not None else rows)
            return
        if size is not None and not plot:
            r = rows[0]
            console.print(f"{r['op']} {r['size_bytes']} B on {r['gpus']} GPUs ({r['nodes']} node(s), "
                          f"{r['topology']}, {r['fidelity']}): {r['time_us']:.2f} us, algbw {r['algbw_GBps']:.2f} "
                          f"GB/s, busbw {r['busbw_GBps']:.2f} GB/s [{r['algorithm']}/{r['protocol']}, "
                          f"{r['source']}]" + (f", 95% band {r['time_lo_s'] * 1e6:.2f} - {r['time_hi_s'] * 1e6:.2f} us"
                                               if "time_lo_s" in r else ""), highlight=False, markup=False)
        else:
            _table(rows)
        if plot:
            console.print(f"wrote {plot}", highlight=False)
