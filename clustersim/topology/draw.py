"""Draw a cluster: one node's devices and links in layers, plus a fabric summary (matplotlib, Agg)."""

from __future__ import annotations

import io
from pathlib import Path

from clustersim.files import write_output

LAYERS = ("nic", "cpu", "pcie_switch", "gpu", "nvswitch")
COLORS = {"nvlink": "#76b900", "pcie": "#1f77b4", "cpu-interconnect": "#9467bd", "infiniband": "#d62728",
          "ethernet": "#ff7f0e"}


def draw_cluster(cluster, path: str | Path) -> None:
    """Write a picture of host 0 of ``cluster`` (and a fabric summary) to ``path``.

    Big clusters are never drawn device by device: only one node is, and the
    fabric appears as text (tiers, switches, rails), so the picture stays
    readable and quick at 16,384 GPUs.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = cluster.template
    by_kind: dict[str, list[str]] = {k: [] for k in LAYERS}
    for d in t.devices:
        by_kind[t.kinds[d]].append(d)
    layers = [k for k in LAYERS if by_kind[k]]
    width = max(len(v) for v in by_kind.values())
    pos: dict[str, tuple[float, float]] = {}
    for row, k in enumerate(layers):
        names = by_kind[k]
        for i, d in enumerate(names):
            pos[d] = ((i + 0.5) * width / len(names), float(len(layers) - row))
    fig_w = min(40.0, max(8.0, width * 0.9))
    fig, ax = plt.subplots(figsize=(fig_w, 2.0 + 1.4 * len(layers)))
    seen = set()
    bw_max = max((a["bandwidth"] for _, _, a in t.edges), default=1.0)
    for s, d, a in t.edges:
        key = tuple(sorted((s, d)))
        if key in seen:
            continue
        seen.add(key)
        (x0, y0), (x1, y1) = pos[s], pos[d]
        ax.plot([x0, x1], [y0, y1], color=COLORS.get(a["kind"], "grey"), alpha=0.6,
                linewidth=0.5 + 2.5 * a["bandwidth"] / bw_max, zorder=1)
    small = width > 24
    for d, (x, y) in pos.items():
        ax.scatter([x], [y], s=60 if small else 400, color="white", edgecolor="black", zorder=2)
        if not small or d.endswith("0"):
            ax.text(x, y, d.replace("pcie_switch", "pcie").replace("nvswitch", "nvs"), ha="center", va="center",
                    fontsize=6 if small else 7, zorder=3)
    for k, c in COLORS.items():
        if any(a["kind"] == k for _, _, a in t.edges):
            ax.plot([], [], color=c, label=k, linewidth=2)
    s = cluster.summary()
    lines = [f"{cluster.name}: {s['gpu_model']} x {s['gpus_per_node']} per node, "
             f"NVLink {s['nvlink_bandwidth_per_gpu_Bps'] / 1e9:g} GB/s/dir per GPU"]
    if s["fabric"]:
        f = s["fabric"]
        lines.append(f"{s['nodes_built']} nodes on a {f['tiers']}-tier {'rail-optimised ' if f['rail_optimized'] else ''}"
                     f"fat tree: {f['switches']} switches of radix {f['switch_radix']}, {f['rails']} rail(s), "
                     f"{f['link_bandwidth_Bps'] * 8 / 1e9:g} Gb/s links")
    ax.set_title("\n".join(lines), fontsize=9)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7)
    ax.set_axis_off()
    fig.tight_layout()
    buf = io.BytesIO()
    try:
        fig.savefig(buf, dpi=120, format=Path(path).suffix[1:].lower() or "png")
    finally:
        plt.close(fig)
    write_output(path, buf.getvalue())
