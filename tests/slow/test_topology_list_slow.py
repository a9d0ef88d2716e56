"""``topo list --json`` against ``topo show --json`` for every shipped preset (moved from
tests/unit/test_topology_list.py): builds each preset's node."""

from __future__ import annotations

import json

import pytest

from clustersim.cli import main
from clustersim.config.base import shipped_names

pytestmark = pytest.mark.slow


def run(capsys, *args):
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_json_agrees_with_topo_show(capsys):
    """Every preset's figures in ``list --json`` equal what ``show --json`` computes for its node."""
    code, out, err = run(capsys, "topo", "list", "--json")
    assert code == 0, err
    items = json.loads(out)  # exactly one JSON document
    assert [p["name"] for p in items] == shipped_names("topology")
    for p in items:
        code, out, err = run(capsys, "topo", "show", p["name"], "--nodes", "1", "--json")
        assert code == 0, err
        show = json.loads(out)
        assert p["gpus_per_node"] == show["gpus_per_node"] and p["gpu_model"] == show["gpu_model"]
        assert p["nics_per_node"] == show["nics_per_node"]
        assert p["nic_bandwidth_per_gpu_Bps"] == pytest.approx(show["nic_bandwidth_per_gpu_Bps"])
        if p["intra_node"] != "PCIe":
            assert p["intra_node_bandwidth_per_gpu_Bps"] == pytest.approx(show["nvlink_bandwidth_per_gpu_Bps"])
        assert p["description"] and p["default_profile"]
