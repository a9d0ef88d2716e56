"""Predict the peak allocated bytes of the memory blind set (validation/memory-blind_h100_2026-11-25/configs.txt) as JSON.

One entry per line of the configs file: name, scenario file, ``--set`` overrides, and the memory
model's ``peak_allocated_bytes`` and ``total_needed_bytes`` (clustersim.workload.memory.step_memory).
Written before the runs are measured; compare with ``peak_memory_bytes`` of reference/train_gpt.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from clustersim.simulate.run import resolve_scenario
from clustersim.workload.compute import ComputeModel
from clustersim.workload.transformer import TransformerStep

ROOT = Path(__file__).resolve().parents[2]


def main(configs: Path = Path(__file__).resolve().parent / "configs.txt") -> list[dict]:
    out = []
    for line in configs.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, scenario, *overrides = line.split()
        rs = resolve_scenario(ROOT / scenario, overrides)
        spec = rs.cluster.gpu_spec
        cm = ComputeModel.from_profile(rs.profile.compute, spec, rs.scenario.training.precision.params)
        mem = TransformerStep(rs.scenario, cm).memory(spec.hbm_bytes)
        out.append({"name": name, "scenario": scenario, "overrides": overrides,
                    "predicted_peak_allocated_bytes": int(mem["peak_allocated_bytes"]),
                    "predicted_total_needed_bytes": int(mem["total_needed_bytes"]), "fits": mem["fits"]})
    return out


if __name__ == "__main__":
    json.dump(main(*(Path(a) for a in sys.argv[1:])), sys.stdout, indent=1)
    print()
