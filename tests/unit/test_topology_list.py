"""`clustersim topo list`: one line per shipped preset at 80 columns, --json, and the catalogue behind it."""

from __future__ import annotations

import pytest

from clustersim.cli import main
from clustersim.config.base import shipped_names
from clustersim.topology.catalog import intra_node_fabric, preset_summary


def run(capsys, *args):
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_table_one_line_per_preset_within_80_columns(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    code, out, err = run(capsys, "topo", "list")
    assert code == 0, err
    lines = out.splitlines()
    names = shipped_names("topology")
    assert lines[0].split()[:2] == ["name", "GPUs/node"]
    assert [ln.split()[0] for ln in lines[1:]] == names  # one line each, sorted, nothing else
    assert all(len(ln) <= 80 for ln in lines), max(lines, key=len)
    row = {ln.split()[0]: ln for ln in lines[1:]}
    assert row["dgx-h100"].split()[1:6] == ["8x", "H100-SXM", "NVSwitch", "450", "400"]
    assert "NVLink+PCIe 300" in row["h100-pcie-4gpu"] and "25 Gb/s" in row["cannon-4xa100"]


def test_wide_terminal_shows_more_of_the_description(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    code, out, _ = run(capsys, "topo", "list")
    row = {ln.split()[0]: ln for ln in out.splitlines()[1:]}
    assert code == 0 and row["gb200-nvl72"].endswith("NVIDIA GB200 NVL72 rack")


def test_help_has_examples(capsys):
    code, out, _ = run(capsys, "topo", "list", "--help")
    assert code == 0 and "Examples" in out and "clustersim topo list --json" in out
    code, out, _ = run(capsys, "topo", "--help")
    assert code == 0 and "list" in out


HOST = ("{src: 'gpu[0-3]', dst: 'pcie_switch[0-1]', kind: pcie, bandwidth_GBps: 63.0, latency_us: 0.25}, "
        "{src: 'pcie_switch[0-1]', dst: 'cpu[0-1]', kind: pcie, bandwidth_GBps: 63.0, latency_us: 0.25}, "
        "{src: cpu0, dst: cpu1, kind: cpu-interconnect, bandwidth_GBps: 32, latency_us: 0.1}")


@pytest.mark.parametrize("links, kind, per_gpu_GBps", [
    # no NVLink: GPUs reach each other over PCIe only; the column shows the GPU's PCIe link
    (f"[{HOST}]", "PCIe", 63.0),
    # a direct NVLink between every pair, 4 links each: a mesh
    ("[{src: 'gpu[0-3]', dst: 'gpu[0-3]', mode: pairs, kind: nvlink, count: 4, bandwidth_GBps: 25, latency_us: 0.25}, "
     f"{HOST}]", "NVLink mesh", 300.0),
    # one bridged pair: NVLink between gpu0 and gpu1, PCIe for the rest
    (f"[{{src: gpu0, dst: gpu1, kind: nvlink, count: 12, bandwidth_GBps: 25, latency_us: 0.25}}, {HOST}]",
     "NVLink+PCIe", 300.0),
])
def test_intra_node_kind_of_a_user_file(tmp_path, links, kind, per_gpu_GBps):
    p = tmp_path / "t.yaml"
    p.write_text("extends: h100-pcie-4gpu\nname: t\ndescription: test node\n"
                 f"node: {{gpus: 4, pcie_switches: 2, cpus: 2, nics: 0, links: {links}}}\n")
    s = preset_summary(p)
    assert s.intra_node == kind and s.intra_node_bandwidth_per_gpu_Bps == pytest.approx(per_gpu_GBps * 1e9)
    assert s.nics_per_node == 0 and s.nic_speed_Gbps is None and s.nic_bandwidth_per_gpu_Bps == 0


def test_one_gpu_node_has_no_intra_node_fabric(shared_cluster):
    c = shared_cluster("hgx-h200")
    assert intra_node_fabric(c.template) == "NVSwitch"
    # a single-GPU node: nothing to connect
    from clustersim.config.topology import TopologySpec
    from clustersim.topology.graphs import compile_node

    spec = TopologySpec.model_validate({"name": "one", "gpu": "H100-SXM", "node": {
        "gpus": 1, "cpus": 1, "links": [{"src": "gpu0", "dst": "cpu0", "kind": "pcie", "bandwidth_GBps": 63.0}]}})
    assert intra_node_fabric(compile_node(spec.node)) == "none"
