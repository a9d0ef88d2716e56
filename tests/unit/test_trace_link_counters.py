"""Perfetto traces of flow runs carry a counter track of each busy link's load over time (GB/s)."""

from __future__ import annotations

import json
from pathlib import Path

from clustersim.topology.cluster import load_cluster
from clustersim.trace.chrome import LINKS_PID

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "ref-ddp2.yaml"


def _counters(cli, tmp_path, *extra):
    out = tmp_path / "t.json"
    r = cli("run", str(SCENARIO), "--trace", str(out), *extra)
    assert r.returncode == 0, r.stderr
    events = json.loads(out.read_text())["traceEvents"]
    return [e for e in events if e["ph"] == "C"], events


def test_flow_trace_has_link_counters_within_line_rate(cli, tmp_path):
    counters, events = _counters(cli, tmp_path, "--fidelity", "flow")
    assert counters and all(e["pid"] == LINKS_PID for e in counters)
    assert any(e["ph"] == "M" and e["pid"] == LINKS_PID for e in events)  # the process is named
    cluster = load_cluster("hgx-h200", gpus=2)
    rate = dict(zip(cluster.link_names, cluster.link_bandwidth))
    for e in counters:
        assert e["name"] in rate
        assert 0 <= e["args"]["GB/s"] * 1e9 <= rate[e["name"]] * (1 + 1e-9)  # max-min sharing never exceeds a link
    assert max(e["args"]["GB/s"] for e in counters) > 0
    assert counters[-1]["args"]["GB/s"] == 0  # every link idle again at the end of the step


def test_analytical_trace_has_no_link_counters(cli, tmp_path):
    counters, _ = _counters(cli, tmp_path, "--fidelity", "analytical")
    assert counters == []
