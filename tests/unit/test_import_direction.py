"""Imports inside ``clustersim`` go one way (docs/architecture.md, "Import direction").

``errors -> units, budget, roofline -> config -> topology -> collectives.formulas (linkmodel, ncclchoice) -> engine -> collectives -> workload
-> simulate (plan, sweep) -> trace, report -> cli``: a module may import its own layer and the
layers left of it, never one to its right (``errors`` is the base: units raise ClusterSimError
on bad input). ``calibration`` is a side branch: it imports only errors, units, budget, roofline, config and
collectives.formulas, collectives.linkmodel, collectives.ncclchoice (and itself), and only layers from simulate on may import it.

Every module of the package is parsed with :mod:`ast` (the scanner of benchmarks/module_graph.py,
which also draws the graph in docs/architecture.md); imports inside functions (and under ``if
TYPE_CHECKING``) count like top-level ones, since they are dependencies all the same.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "clustersim"


def _load_module_graph():
    """benchmarks/module_graph.py: the import scanner shared with the generated doc graph."""
    spec = importlib.util.spec_from_file_location("module_graph", ROOT / "benchmarks" / "module_graph.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


MG = _load_module_graph()
# parse each module once for the whole file: the direction check and the doc graph read the same imports
MG.imports_of = functools.cache(MG.imports_of)

#: (module prefix, layer rank); the longest matching prefix wins.
LAYERS = [
    ("clustersim.errors", 0),
    ("clustersim", 0),  # the package root: __version__ and the re-exported ClusterSimError
    ("clustersim.units", 1),
    ("clustersim.budget", 1),  # bounds and the work/memory budget: numbers only (errors, units)
    ("clustersim.roofline", 1),  # roofline of a tiled kernel (wave quantisation, HBM bound): numbers only
    ("clustersim.config", 2),
    ("clustersim.topology", 3),
    ("clustersim.collectives.formulas", 4),
    # the link model and NCCL's choice of algorithm/protocol: engine-free like formulas, so that
    # calibration fits the very function the simulator evaluates
    ("clustersim.collectives.linkmodel", 4),
    ("clustersim.collectives.ncclchoice", 4),
    ("clustersim.engine", 5),
    ("clustersim.collectives", 6),
    ("clustersim.workload", 7),
    ("clustersim.simulate", 8),
    ("clustersim.plan", 8),
    ("clustersim.sweep", 8),
    ("clustersim.reliability", 8),
    ("clustersim.calibration", 8),
    ("clustersim.trace", 9),
    ("clustersim.report", 9),
    ("clustersim.cli", 10),
    ("clustersim.__main__", 10),
]
#: Layers a module of ``calibration`` may import (besides its own package).
CALIBRATION_MAY_IMPORT = ("clustersim.errors", "clustersim.units", "clustersim.budget", "clustersim.roofline",
                          "clustersim.config", "clustersim.collectives.formulas", "clustersim.collectives.linkmodel",
                          "clustersim.collectives.ncclchoice", "clustersim.calibration")


def _under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def layer_of(module: str) -> tuple[str, int]:
    """(matched prefix, rank) of a ``clustersim`` module name."""
    best = max((p for p, _ in LAYERS if _under(module, p)), key=len, default=None)
    if best is None:
        raise KeyError(module)
    return best, dict(LAYERS)[best]


def violations(pkg: Path = PKG) -> list[str]:
    """One line per import against the documented direction: ``file:line: a (layer) imports b (layer)``."""
    bad = []
    for path in sorted(pkg.rglob("*.py")):
        me = MG.module_name(path, pkg)
        my_layer, my_rank = layer_of(me)
        for line, target, _lazy in MG.imports_of(path, pkg):
            t_layer, t_rank = layer_of(target)
            where = f"{path.relative_to(pkg.parent)}:{line}"
            if my_layer == "clustersim.calibration" and not any(_under(target, p) for p in CALIBRATION_MAY_IMPORT):
                bad.append(f"{where}: {me} (calibration) imports {target} ({t_layer}); calibration may import only "
                           + ", ".join(CALIBRATION_MAY_IMPORT))
            elif t_rank > my_rank:
                bad.append(f"{where}: {me} ({my_layer}) imports {target} ({t_layer}), a layer to its right")
    return bad


def test_every_module_has_a_layer():
    unmapped = []
    for path in sorted(PKG.rglob("*.py")):
        try:
            layer_of(MG.module_name(path))
        except KeyError:
            unmapped.append(str(path.relative_to(PKG.parent)))
    assert not unmapped, f"modules with no layer in LAYERS: {unmapped}"


def test_imports_follow_the_documented_direction():
    bad = violations()
    assert not bad, "imports against the direction of docs/architecture.md:\n" + "\n".join(bad)


@pytest.mark.parametrize(("source", "expected"), [
    ("from clustersim.simulate.run import run_scenario\n", ["clustersim/engine/x.py:1"]),
    ("def f():\n    import clustersim.cli\n", ["clustersim/engine/x.py:2"]),
    ("from ..collectives import model\n", ["clustersim/engine/x.py:1"]),
    ("from clustersim.topology import load_cluster\nfrom . import flow\nfrom clustersim.collectives import formulas\n",
     []),
])
def test_the_check_catches_upward_imports(tmp_path, source, expected):
    """The scanner itself: function-level and relative imports are seen, downward ones pass."""
    root = tmp_path / "clustersim"
    for sub in ("", "engine", "collectives", "simulate", "topology", "cli"):
        (root / sub).mkdir(parents=True, exist_ok=True)
        (root / sub / "__init__.py").write_text("")
    for mod in ("collectives/model.py", "collectives/formulas.py", "simulate/run.py", "engine/flow.py"):
        (root / mod).write_text("")
    (root / "engine" / "x.py").write_text(source)
    assert [v.split(": ")[0] for v in violations(root)] == expected


def test_calibration_stays_on_its_branch(tmp_path):
    root = tmp_path / "clustersim"
    (root / "calibration").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "calibration" / "__init__.py").write_text("")
    (root / "calibration" / "fit.py").write_text("from clustersim.config.profile import Profile\n"
                                                 "import clustersim.topology\n")
    assert [v.split(": ")[0] for v in violations(root)] == ["clustersim/calibration/fit.py:2"]


def test_the_architecture_doc_shows_the_current_module_graph():
    doc = (ROOT / "docs" / "architecture.md").read_text()
    assert MG.doc_with_graph(doc, MG.render()) == doc, \
        "docs/architecture.md shows an old module graph: run python benchmarks/module_graph.py --write-doc"
