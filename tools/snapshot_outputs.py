"""Record (or compare) the JSON outputs of every shipped scenario, topology and README tour command.

Used to prove that a restructuring changes no result: run it before the change with
``--write DIR``, after it with ``--compare DIR``. Wall-time fields (any key containing
``wall``) are dropped before comparing; everything else must be byte-identical.

Usage::

    python tools/snapshot_outputs.py --write /tmp/before
    python tools/snapshot_outputs.py --compare /tmp/before
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"


def _commands() -> dict[str, list[str]]:
    cmds: dict[str, list[str]] = {}
    for s in sorted((ROOT / "scenarios").glob("*.yaml")):
        if "study" in s.read_text()[:200]:
            continue
        if not s.stem.endswith("-100k"):  # flow at 100k GPUs takes minutes: benchmarks/scale_growth.py
            cmds[f"run-{s.stem}-default"] = ["run", str(s), "--json"]
        cmds[f"run-{s.stem}-analytical"] = ["run", str(s), "--json", "--fidelity", "analytical"]
    for name in ["gpt-1b-ddp", "ref-pp2-1f1b", "hybrid-tp2-pp2-dp2"]:
        cmds[f"run-{name}-band"] = ["run", str(ROOT / "scenarios" / f"{name}.yaml"), "--json", "--band"]
        cmds[f"run-{name}-full"] = ["run", str(ROOT / "scenarios" / f"{name}.yaml"), "--json", "--full"]
    for t in sorted((ROOT / "topologies").glob("*.yaml")):
        extra = ["--nodes", "4"] if "superpod" in t.stem or "colossus" in t.stem else []
        cmds[f"topo-{t.stem}"] = ["topo", "show", t.stem, "--json", *extra]
        for op in ["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast"]:
            cmds[f"coll-{t.stem}-{op}"] = ["collective", op, "--topology", t.stem, *extra,
                                           "--sizes", "1KiB:1GiB", "--json"]
        cmds[f"coll-{t.stem}-flow"] = ["collective", "all_reduce", "--topology", t.stem, *extra,
                                       "--size", "256MiB", "--fidelity", "flow", "--json"]
    # README tour
    cmds["tour-h200-ar"] = ["collective", "all_reduce", "--topology", "hgx-h200", "--gpus", "2",
                            "--sizes", "1MiB:4GiB", "--json"]
    cmds["tour-superpod-flow"] = ["collective", "all_reduce", "--topology", "dgx-h100-superpod",
                                  "--nodes", "128", "--size", "1GiB", "--fidelity", "flow", "--json"]
    cmds["tour-superpod-show"] = ["topo", "show", "dgx-h100-superpod", "--nodes", "128", "--json"]
    cmds["tour-validate"] = ["validate", str(ROOT / "scenarios/gpt-1b-ddp.yaml"), "--set",
                             "parallelism.dp=1", "--set", "cluster.gpus=1"]
    cmds["tour-175b-sp"] = ["run", str(ROOT / "scenarios/gpt3-175b.yaml"), "--json", "--set",
                            "parallelism.sequence_parallel=true", "--set", "parallelism.tp_comm_overlap=true"]
    cmds["tour-ref-swiglu"] = ["run", str(ROOT / "scenarios/ref-single.yaml"), "--json", "--set",
                               "model.mlp=swiglu", "--set", "model.position_embedding=rope"]
    cmds["tour-import-topo"] = ["topo", "import", str(DATA / "h200x2/nvidia-smi-topo-m.txt"), "-o", "/dev/stdout"]
    return cmds


def _strip(obj):
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if "wall" not in k}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def _run(args: list[str]) -> str:
    p = subprocess.run([sys.executable, "-m", "clustersim", *args], capture_output=True, text=True,
                       cwd=ROOT, timeout=600)
    out = p.stdout
    try:
        out = json.dumps(_strip(json.loads(out)), sort_keys=True, indent=1)
    except ValueError:
        pass
    return f"exit {p.returncode}\n{out}\n--- stderr\n{p.stderr if p.returncode else ''}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--write", type=Path)
    g.add_argument("--compare", type=Path)
    ap.add_argument("-j", type=int, default=2)
    a = ap.parse_args()
    cmds = _commands()
    with cf.ThreadPoolExecutor(a.j) as ex:
        outs = dict(zip(cmds, ex.map(_run, cmds.values())))
    if a.write:
        a.write.mkdir(parents=True, exist_ok=True)
        for k, v in outs.items():
            (a.write / f"{k}.txt").write_text(v)
        print(f"wrote {len(outs)} outputs to {a.write}")
        return 0
    bad = []
    for k, v in outs.items():
        f = a.compare / f"{k}.txt"
        if not f.exists() or f.read_text() != v:
            bad.append(k)
    print(f"{len(outs) - len(bad)} of {len(outs)} outputs identical")
    for k in bad:
        print(f"  DIFFERS: {k}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
