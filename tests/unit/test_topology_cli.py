"""`clustersim topo show|draw|import`: output, JSON contract, bad input -> exit 2 with a clear message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clustersim.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "h200x2"


def run(capsys, *args):
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    out = capsys.readouterr()
    # rich may wrap long messages at the console width: compare on normalised whitespace
    return code, out.out, " ".join(out.err.split())


def nvlink_per_gpu(doc):
    tot: dict[str, float] = {}
    for l in doc["links"]:
        if l["kind"] == "nvlink" and l["src"] in doc["nvlink_bandwidth_Bps_by_gpu"]:
            tot[l["src"]] = tot.get(l["src"], 0.0) + l["bandwidth_Bps"]
    return tot


@pytest.mark.parametrize("name, gpus, per_gpu", [("dgx-h100", 8, 450e9), ("hgx-h200", 8, 450e9),
                                                 ("dgx-a100", 8, 300e9), ("gb200-nvl72", 72, 900e9)])
def test_show_json_done_criteria(capsys, name, gpus, per_gpu):
    code, out, err = run(capsys, "topo", "show", name, "--json")
    assert code == 0, err
    doc = json.loads(out)  # exactly one JSON document
    assert doc["gpus"] == gpus and doc["nodes"] == 1 and isinstance(doc["links"], list)
    assert set(doc["links"][0]) >= {"src", "dst", "kind", "bandwidth_Bps", "latency_s"}
    tot = nvlink_per_gpu(doc)
    assert len(tot) == gpus and all(v == pytest.approx(per_gpu) for v in tot.values())


def test_show_table_and_options(capsys):
    code, out, _ = run(capsys, "topo", "show", "dgx-h100", "--nodes", "2")
    assert code == 0 and "450 GB/s" in out and "H100-SXM" in out and "fat tree" in out
    code, out, _ = run(capsys, "topo", "show", "hgx-h200", "--gpus", "2", "--json")
    doc = json.loads(out)
    assert doc["gpus"] == 2 and doc["nodes"] == 1 and doc["gpu_model"] == "H200-SXM"
    code, out, _ = run(capsys, "topo", "show", "dgx-h100", "--nodes", "3", "--json")
    doc = json.loads(out)
    assert doc["nodes"] == 3 and doc["gpus"] == 24 and doc["fabric"]["tiers"] == 2


@pytest.mark.parametrize("content, match", [
    ("name: t\ngpu: H100-SXM\nnode: {gpus: 1\n", "YAML syntax"),
    ("", "empty"),
    ("name: t\ngpu: H100-SXM\nnode: {gpus: 1, cpus: 1, extra: 1, links: []}\n", "node.extra"),
    ("name: t\ngpu: H100-SXM\nnode: {gpus: two, cpus: 1, links: []}\n", "node.gpus"),
    ("name: t\ngpu: H100-SXM\nnode: {gpus: 1, cpus: 1, links: [{src: gpu0, dst: cpu0, kind: pcie, bandwidth_GBps: -1}]}\n",
     "bandwidth_GBps"),
    ("name: t\ngpu: H100-SXM\nnode: {gpus: 2, cpus: 1, links: [{src: gpu0, dst: cpu0, kind: pcie, bandwidth_GBps: 63}]}\n",
     "gpu1 is not connected"),
    ("name: t\ngpu: Z80\nnode: {gpus: 1, cpus: 1, links: [{src: gpu0, dst: cpu0, kind: pcie, bandwidth_GBps: 63}]}\n",
     "unknown GPU"),
])
def test_bad_topology_files_exit_2(capsys, tmp_path, content, match):
    p = tmp_path / "bad.yaml"
    p.write_text(content)
    code, out, err = run(capsys, "topo", "show", str(p), "--json")
    assert code == 2 and out == ""
    assert match in err and "bad.yaml" in err and "Traceback" not in err


def test_binary_garbage_and_unknown_name_exit_2(capsys, tmp_path):
    p = tmp_path / "junk.yaml"
    p.write_bytes(bytes(range(256)) * 4)
    code, _, err = run(capsys, "topo", "show", str(p))
    assert code == 2 and "binary" in err
    code, _, err = run(capsys, "topo", "show", "no-such-topology")
    assert code == 2 and "unknown topology" in err
    code, _, err = run(capsys, "topo", "show", "dgx-h100", "--gpus", "9", "--nodes", "1")
    assert code == 2 and "9 GPUs" in err


def test_import_writes_loadable_yaml(capsys, tmp_path):
    out = tmp_path / "h200x2.yaml"
    code, stdout, err = run(capsys, "topo", "import", str(DATA / "nccl_topo.xml"), "-o", str(out))
    assert code == 0, err
    assert "warning" in err and "link_width" in err
    code, stdout, err = run(capsys, "topo", "show", str(out), "--json")
    assert code == 0 and json.loads(stdout)["gpus"] == 2
    code, _, err = run(capsys, "topo", "import", str(DATA / "nvidia-smi.txt"))
    assert code == 2 and "unknown format" in err
    code, _, err = run(capsys, "topo", "import", str(DATA / "nvidia-smi-topo-m.txt"), "--gpu", "Z80")
    assert code == 2 and "unknown GPU" in err


def test_help_has_examples(capsys):
    for cmd in ("show", "draw", "import"):
        code, out, _ = run(capsys, "topo", cmd, "--help")
        assert code == 0 and "Examples" in out
