"""``clustersim topo``: show, draw and import topologies (thin: parse, call the library, render)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from rich.markup import escape

from clustersim.cli.common import budget, console, err_console, max_events_option, max_memory_option, print_json
from clustersim.errors import ClusterSimError
from clustersim.files import write_output

app = typer.Typer(
    help="Inspect, draw and import hardware topologies.\n\n"
    "Examples:\n\n"
    "  clustersim topo list\n\n"
    "  clustersim topo show dgx-h100\n\n"
    "  clustersim topo show dgx-h100-superpod --nodes 4 --json\n\n"
    "  clustersim topo draw hgx-h200 -o hgx-h200.png\n\n"
    "  clustersim topo import nccl_topo.xml -o my-node.yaml",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)


def _load(topology: str, nodes: Optional[int], gpus: Optional[int]):
    from clustersim.topology import load_cluster

    return load_cluster(topology, nodes=nodes, gpus=gpus)


def _links_json(cluster) -> list[dict]:
    return [{"src": u, "dst": v, "kind": d["kind"], "bandwidth_Bps": d["bandwidth"], "latency_s": d["latency"],
             "index": d["index"]}
            for u, v, d in cluster.graph.edges(data=True)]


def _nvlink_by_gpu(cluster) -> dict:
    """Each GPU's NVLink bandwidth out of it, bytes/s (the sum over its NVLink edges)."""
    return {g: float(sum(d["bandwidth"] for _, _, d in cluster.graph.out_edges(g, data=True) if d["kind"] == "nvlink"))
            for g in cluster.gpus}


@app.command("list")
def list_(
    as_json: bool = typer.Option(False, "--json", help="Print one JSON list (every field, full descriptions)."),
) -> None:
    """List the shipped topology presets, one line each.

    Columns: bare name (what --topology takes), GPUs per node and GPU model, intra-node
    fabric (NVSwitch, NVLink mesh, NVLink+PCIe or PCIe) with one GPU's bandwidth over it
    in GB/s per direction, NIC line rate per GPU, and the first clause of the description,
    cut to the terminal width (80 columns when not a terminal). --json has every field and
    the whole description.

    Examples:

      clustersim topo list

      clustersim topo list --json

      clustersim topo show dgx-h100-superpod --nodes 4
    """
    import re
    import shutil

    from clustersim.topology.catalog import list_presets

    presets = list_presets()
    if as_json:
        print_json([p.to_dict() for p in presets])
        return
    header = ("name", "GPUs/node", "intra-node GB/s", "NIC/GPU", "description")
    rows = [(p.name, f"{p.gpus_per_node}x {p.gpu_model}",
             f"{p.intra_node} {p.intra_node_bandwidth_per_gpu_Bps / 1e9:g}",
             f"{p.nic_bandwidth_per_gpu_Bps * 8 / 1e9:g} Gb/s" if p.nics_per_node else "none",
             re.split(r" \(|, |; ", p.description, maxsplit=1)[0])
            for p in presets]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header) - 1)]
    room = shutil.get_terminal_size((80, 24)).columns - sum(widths) - 2 * len(widths)
    for r in [header, *rows]:
        desc = r[-1] if len(r[-1]) <= room else r[-1][: max(room - 3, 0)] + "..."
        typer.echo("  ".join([*(c.ljust(w) for c, w in zip(r, widths)), desc]).rstrip())


@app.command("show")
def show(
    topology: str = typer.Argument(..., help="Shipped topology name (dgx-h100, hgx-h200, ...) or a YAML path."),
    nodes: Optional[int] = typer.Option(None, "--nodes", help="Replicate the node preset N times on its fabric."),
    gpus: Optional[int] = typer.Option(None, "--gpus", help="Use the first N GPUs as ranks."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object (summary plus every directed link)."),
    max_memory: Optional[str] = max_memory_option(),
    max_events: Optional[int] = max_events_option(),
) -> None:
    """Summarise a topology: GPUs, hosts, GPU model, NVLink capacity per GPU, NICs, links by kind.

    Examples:

      clustersim topo show dgx-h100

      clustersim topo show hgx-h200 --gpus 2 --json

      clustersim topo show dgx-a100 --nodes 4
    """
    with budget(max_memory, max_events):
        c = _load(topology, nodes, gpus)
        s = c.summary()
        if as_json:
            s["links"] = _links_json(c)  # builds the device graph (checked against --max-memory)
    if as_json:
        s["nvlink_bandwidth_Bps_by_gpu"] = _nvlink_by_gpu(c)
        print_json(s)
        return
    render_topology(c, s)


def render_topology(c, s: dict) -> None:
    """The summary of cluster ``c`` (``s``: its :meth:`~clustersim.topology.Cluster.summary`) as one table."""
    from rich.table import Table

    from clustersim.units import format_bandwidth

    t = Table(title=f"{c.name}: {c.spec.description or ''}", show_header=True, header_style="bold")
    t.add_column("property")
    t.add_column("value")
    t.add_row("GPUs (ranks)", str(s["gpus"]))
    t.add_row("hosts", f"{s['nodes']} of {s['nodes_built']} built, {s['gpus_per_node']} GPUs each")
    t.add_row("GPU model", f"{s['gpu_model']} ({s['hbm_GB']:g} GB HBM, {s['hbm_bandwidth_GBps']:g} GB/s; "
              f"bf16 {s['gpu_peak_tflops']['bf16']:g} TFLOP/s dense)")
    t.add_row("NVLink per GPU", f"{format_bandwidth(s['nvlink_bandwidth_per_gpu_Bps'])} per direction")
    nic = c.spec.node
    t.add_row("NICs per host", f"{nic.nics} x {nic.nic_speed_Gbps or 0:g} Gb/s {nic.nic_kind}" if nic.nics else "none")
    t.add_row("NIC bandwidth per GPU", format_bandwidth(s["nic_bandwidth_per_gpu_Bps"]))
    t.add_row("NVLS capable", str(s["nvls_capable"]))
    t.add_row("devices", ", ".join(f"{k} {v}" for k, v in s["devices"].items()))
    t.add_row("directed links", ", ".join(f"{k} {v}" for k, v in s["link_counts"].items()))
    if s["fabric"]:
        f = s["fabric"]
        t.add_row("fabric", f"fat tree, {f['tiers']} tier(s), {'rail-optimised, ' if f['rail_optimized'] else ''}"
                  f"radix {f['switch_radix']}, {f['switches']} switches, oversubscription {f['oversubscription']:g}:1")
    t.add_row("default profile", str(s["default_profile"]))
    console.print(t)
    if c.spec.inferred:
        console.print("[dim]inferred: " + "; ".join(c.spec.inferred) + "[/]", highlight=False)


@app.command("draw")
def draw(
    topology: str = typer.Argument(..., help="Shipped topology name or a YAML path."),
    output: Path = typer.Option(..., "-o", "--output", help="Image file to write (.png, .svg, .pdf)."),
    nodes: Optional[int] = typer.Option(None, "--nodes", help="Replicate the node preset N times."),
    max_memory: Optional[str] = max_memory_option(),
    max_events: Optional[int] = max_events_option(),
) -> None:
    """Draw one node's devices and links, with a summary of the fabric for clusters.

    Examples:

      clustersim topo draw dgx-h100 -o dgx-h100.png

      clustersim topo draw dgx-h100-superpod -o superpod.png
    """
    from clustersim.topology.draw import draw_cluster

    if output.suffix.lower() not in (".png", ".svg", ".pdf"):
        raise ClusterSimError("output must end in .png, .svg or .pdf", field="--output")
    with budget(max_memory, max_events):
        c = _load(topology, nodes, None)
        draw_cluster(c, output)
    err_console.print(f"wrote {output}", highlight=False)


@app.command("import")
def import_(
    file: Path = typer.Argument(..., help="`nvidia-smi topo -m` output or an NCCL_TOPO_DUMP_FILE XML."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", help="Topology YAML to write (default: stdout)."),
    name: Optional[str] = typer.Option(None, "--name", help="Topology name (default: the file's stem)."),
    gpu: Optional[str] = typer.Option(None, "--gpu", help="GPU catalogue name (H100-SXM, H200-SXM, A100-SXM-80GB, ...)."),
    nic_gbps: Optional[float] = typer.Option(None, "--nic-gbps", help="NIC line rate for topo -m input (not in its output)."),
) -> None:
    """Turn a real machine's topology dump into a topology YAML (format detected from the content).

    Gaps in the dump (VM dumps: link_width="0", NVSwitches hidden behind
    fffffff:ff:ff.0) are filled with defaults; each is printed as a warning and
    listed under `inferred:` in the file.

    Examples:

      NCCL_TOPO_DUMP_FILE=topo.xml python train.py; clustersim topo import topo.xml -o mynode.yaml

      nvidia-smi topo -m > topo.txt; clustersim topo import topo.txt --gpu H100-SXM --nic-gbps 400 -o mynode.yaml
    """
    from clustersim.topology.importers import import_file, to_yaml

    if gpu is not None:
        from clustersim.config.topology import gpu_spec

        gpu = gpu_spec(gpu).name
    if nic_gbps is not None and nic_gbps <= 0:
        raise ClusterSimError("must be > 0", field="--nic-gbps")
    data, warns = import_file(file, name=name, gpu=gpu, nic_speed_Gbps=nic_gbps)
    for w in warns:
        loud = "ASSUMED" in w  # a guessed GPU model changes every compute prediction: say it apart
        err_console.print(f"[bold red]warning:[/] [bold]{escape(w)}[/]" if loud else f"[yellow]warning:[/] {escape(w)}",
                          highlight=False, soft_wrap=True)
    text = to_yaml(data)
    if output is None:
        import sys

        sys.stdout.write(text)
    else:
        write_output(output, text)
        err_console.print(f"wrote {output}", highlight=False)


def register(root: typer.Typer) -> None:
    """Attach this module's commands to the root app (the root mounts :data:`app` as ``topo``)."""
