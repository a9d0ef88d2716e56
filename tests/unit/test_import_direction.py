"""Imports inside ``clustersim`` go one way (docs/architecture.md, "Import direction").

``errors -> units, budget, roofline, breakdown -> config -> topology -> collectives.formulas (linkmodel, ncclchoice) -> engine -> collectives -> workload
-> simulate (plan, sweep) -> trace, report -> cli``: a module may import its own layer and the
layers left of it, never one to its right (``errors`` is the base: units raise ClusterSimError
on bad input). ``calibration`` is a side branch: it imports only errors, files, units, budget, roofline, config and
collectives.formulas, collectives.linkmodel, collectives.ncclchoice, collectives.uncertainty (and itself), and only layers from simulate on may import it.

Every module of the package is parsed with :mod:`ast` (the scanner of tools/module_graph.py,
which also draws the graph in docs/modules.md); imports inside functions (and under ``if
TYPE_CHECKING``) count like top-level ones, since they are dependencies all the same.

No two modules import each other, directly or around a longer loop, not even inside one layer
(:func:`import_cycles`): a circle is two concepts that cannot be read, tested or moved apart.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "clustersim"


def _load_module_graph():
    """tools/module_graph.py: the import scanner shared with the generated doc graph."""
    spec = importlib.util.spec_from_file_location("module_graph", ROOT / "tools" / "module_graph.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


MG = _load_module_graph()
# parse each module once for the whole file: the direction check and the doc graph read the same imports
MG.imports_of = functools.cache(MG.imports_of)

#: (module prefix, layer rank); the longest matching prefix wins.
LAYERS = [
    ("clustersim.errors", 0),
    ("clustersim.files", 0),  # the one input reader and output writer (errors only)
    ("clustersim", 0),  # the package root: __version__ and the re-exported ClusterSimError
    ("clustersim.units", 1),
    ("clustersim.budget", 1),  # bounds and the work/memory budget: numbers only (errors, units)
    ("clustersim.roofline", 1),  # roofline of a tiled kernel (wave quantisation, HBM bound): numbers only
    ("clustersim.breakdown", 1),  # the names of a step's breakdown parts: simulate, sweep and report read them
    ("clustersim.config", 2),
    ("clustersim.topology", 3),
    ("clustersim.collectives.formulas", 4),
    # the link model and NCCL's choice of algorithm/protocol: engine-free like formulas, so that
    # calibration fits the very function the simulator evaluates
    ("clustersim.collectives.linkmodel", 4),
    ("clustersim.collectives.ncclchoice", 4),
    # a calibrated entry's time with its 95% band: read by the collective table and by calibrate report
    ("clustersim.collectives.uncertainty", 4),
    ("clustersim.engine", 5),
    ("clustersim.collectives", 6),
    ("clustersim.workload", 7),
    ("clustersim.simulate", 8),
    ("clustersim.plan", 8),
    ("clustersim.sweep", 8),
    ("clustersim.reliability", 8),
    ("clustersim.calibration", 8),
    # other tools' files as scenarios, training logs beside predictions: they build and simulate scenarios
    ("clustersim.importers", 8),
    ("clustersim.trace", 9),
    ("clustersim.report", 9),
    ("clustersim.cli", 10),
    ("clustersim.__main__", 10),
]
#: Layers a module of ``calibration`` may import (besides its own package).
CALIBRATION_MAY_IMPORT = ("clustersim.errors", "clustersim.files", "clustersim.units", "clustersim.budget", "clustersim.roofline",
                          "clustersim.config", "clustersim.collectives.formulas", "clustersim.collectives.linkmodel",
                          "clustersim.collectives.ncclchoice", "clustersim.collectives.uncertainty",
                          "clustersim.calibration")


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


def import_cycles(pkg: Path = PKG) -> list[str]:
    """One line per import cycle among the modules of ``pkg``: the modules around it, each with the
    ``file:line`` of its import of the next (``a -> b (a.py:3) -> a (b.py:7)``), sorted.

    A cycle is a strongly connected set of more than one module, or a module importing itself;
    one loop through each set is shown (Tarjan's algorithm, then a walk inside the set).
    """
    graph = MG.scan(pkg)
    where: dict[tuple[str, str], str] = {}
    succ: dict[str, list[str]] = {m: [] for m in graph}
    for m, imps in graph.items():
        path = pkg.parent / Path(*m.split("."))
        rel = (path / "__init__.py" if path.is_dir() else path.with_suffix(".py")).relative_to(pkg.parent)
        for line, target, _lazy in imps:
            if target in succ and (m, target) not in where:
                where[(m, target)] = f"{rel}:{line}"
                succ[m].append(target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    sccs: list[list[str]] = []

    def strongconnect(v: str) -> None:  # Tarjan: the package's few hundred modules stay far below the recursion limit
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in succ[v]:
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or (v, v) in where:
                sccs.append(sorted(comp))

    for v in sorted(succ):
        if v not in index:
            strongconnect(v)
    out = []
    for comp in sccs:
        inside = set(comp)
        loop, seen = [comp[0]], {comp[0]}
        while True:  # follow imports inside the set until a module repeats: that closes a loop
            nxt = next(w for w in succ[loop[-1]] if w in inside)
            if nxt in seen:
                loop = loop[loop.index(nxt):] + [nxt]
                break
            loop.append(nxt)
            seen.add(nxt)
        out.append(loop[0] + "".join(f" -> {b} ({where[(a, b)]})" for a, b in zip(loop, loop[1:])))
    return sorted(out)


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


def test_no_import_cycle():
    cycles = import_cycles()
    assert not cycles, "modules that import each other (directly or around a loop):\n" + "\n".join(cycles)


def test_the_cycle_check_finds_loops_lazy_ones_included(tmp_path):
    """The cycle scanner itself: a loop through a function-level import and a longer loop are found,
    a one-way chain is not."""
    root = tmp_path / "clustersim"
    (root / "p").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "p" / "__init__.py").write_text("")
    (root / "p" / "a.py").write_text("from clustersim.p import b\n")
    (root / "p" / "b.py").write_text("def f():\n    from clustersim.p.a import x\n")
    (root / "p" / "c.py").write_text("import clustersim.p.d\n")
    (root / "p" / "d.py").write_text("from . import e\n")
    (root / "p" / "e.py").write_text("from clustersim.p import c\n")
    (root / "p" / "f.py").write_text("from clustersim.p import a\n")  # into a loop, not part of one
    assert import_cycles(root) == [
        "clustersim.p.a -> clustersim.p.b (clustersim/p/a.py:1) -> clustersim.p.a (clustersim/p/b.py:2)",
        "clustersim.p.c -> clustersim.p.d (clustersim/p/c.py:1) -> clustersim.p.e (clustersim/p/d.py:1)"
        " -> clustersim.p.c (clustersim/p/e.py:1)",
    ]


def test_calibration_stays_on_its_branch(tmp_path):
    root = tmp_path / "clustersim"
    (root / "calibration").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "calibration" / "__init__.py").write_text("")
    (root / "calibration" / "fit.py").write_text("from clustersim.config.profile import Profile\n"
                                                 "import clustersim.topology\n")
    assert [v.split(": ")[0] for v in violations(root)] == ["clustersim/calibration/fit.py:2"]


def test_the_modules_page_shows_the_current_module_graph():
    doc = (ROOT / "docs" / "modules.md").read_text()
    assert MG.doc_with_graph(doc, MG.render()) == doc, \
        "docs/modules.md shows an old module graph: run python tools/module_graph.py --write-doc"


def test_the_architecture_doc_links_the_modules_page():
    doc = (ROOT / "docs" / "architecture.md").read_text()
    assert "(modules.md)" in doc and MG.BEGIN not in doc, "docs/architecture.md should link docs/modules.md, not hold the graph"
