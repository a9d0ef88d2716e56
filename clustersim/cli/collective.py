"""`clustersim collective`: predicted cost of one NCCL collective (analytical or flow fidelity)."""

from __future__ import annotations

import io
from pathlib import Path

import typer

from clustersim.cli.common import max_events_option, max_memory_option
from clustersim.errors import ClusterSimError
from clustersim.files import write_output

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


def render_one(r: dict) -> None:
    """One size's prediction on one line."""
    from clustersim.cli.common import console

    console.print(f"{r['op']} {r['size_bytes']} B on {r['gpus']} GPUs ({r['nodes']} node(s), "
                  f"{r['topology']}, {r['fidelity']}): {r['time_us']:.2f} us, algbw {r['algbw_GBps']:.2f} "
                  f"GB/s, busbw {r['busbw_GBps']:.2f} GB/s [{r['algorithm']}/{r['protocol']}, "
                  f"{r['source']}]" + (f", 95% band {r['time_lo_s'] * 1e6:.2f} - {r['time_hi_s'] * 1e6:.2f} us"
                                       if "time_lo_s" in r else ""), highlight=False, markup=False)


def render_table(rows: list[dict]) -> None:
    """The nccl-tests-style table: a row per size (the 95% band column when a row has one)."""
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


def render_busbw_plot(rows: list[dict], path: str, measured: str | None = None) -> Path:
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
    buf = io.BytesIO()
    try:
        fig.savefig(buf, dpi=120, format=out.suffix[1:].lower() or "png")
    except (OSError, ValueError) as exc:  # unknown image suffix
        raise ClusterSimError(f"cannot write the plot: {getattr(exc, 'strerror', None) or exc}", file=str(out)) from None
    finally:
        plt.close(fig)
    return write_output(out, buf.getvalue(), "the plot")


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
        from clustersim.collectives.table import collective_table

        if measured and not plot:
            raise ClusterSimError("--measured needs --plot FILE.png", field="measured")
        with budget(max_memory, max_events), progress(f"{op} on {topology} ({fidelity})"):
            rows = collective_table(op, topology, gpus=gpus, nodes=nodes, size=size, sizes=sizes, algorithm=algorithm,
                                    protocol=protocol, nvls=nvls, p2p=p2p, gdr=gdr, profile=profile,
                                    fidelity=fidelity).rows
            if plot:
                render_busbw_plot(rows, plot, measured)
        if as_json:
            print_json(rows[0] if size is not None else rows)
            return
        if size is not None and not plot:
            render_one(rows[0])
        else:
            render_table(rows)
        if plot:
            console.print(f"wrote {plot}", highlight=False)
