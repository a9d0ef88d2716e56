"""Every figure quoted in README.md and docs/*.md, regenerated from the code, and checked.

A number in the docs that the code computes is written between markers, inline::

    GPT-3 175B takes <!-- fig:run.gpt3-175b.step -->7.789 s<!-- /fig --> per step

or as a generated block (a table, a command with its output), each marker on its own line::

    <!-- gen:example.plan -->
    ...
    <!-- /gen:example.plan -->

``FIGURES`` maps each KEY to a function returning the text that belongs between its markers
now. ``--check`` compares every marker of README.md and docs/*.md with it and exits 1 listing
each stale or unknown marker (``file:line``, shown and now); ``--write`` rewrites the markers
in place. ``tests/integration/test_doc_figures.py`` runs the check, so a figure that no longer
matches the code fails a test. Spec constants (a 450 GB/s NVLink) need no marker, and the
study folders' READMEs (``validation/*/README.md``) are dated records, not checked.

Figures are deterministic: no wall clock is ever part of one (command outputs that print a wall
time have it replaced, see ``_normalise``), and every simulation behind them is memoised, so
one run serves all the figures read from it.

Usage::

    python tools/doc_figures.py --check            # README.md and docs/*.md
    python tools/doc_figures.py --write
    python tools/doc_figures.py --check docs/training.md
    python tools/doc_figures.py --list             # the registered keys
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: An inline figure: the text between the two comments, on one line.
INLINE = re.compile(r"<!-- fig:(?P<key>[A-Za-z0-9_.:@=+-]+) -->(?P<text>.*?)<!-- /fig -->")
#: A generated block opens and closes on lines of their own.
BLOCK_OPEN = re.compile(r"^<!-- gen:(?P<key>[A-Za-z0-9_.:@=+-]+) -->[ \t]*$", re.M)
_ANY_MARKER = re.compile(r"<!-- (/?)(fig|gen)[:\s]")


class MarkerError(ValueError):
    """A document whose markers cannot be read (an unclosed block, a stray closing marker)."""


@dataclass(frozen=True)
class Marker:
    """One marked figure of a document.

    Attributes
    ----------
    key : str
        The figure's registry key.
    kind : str
        ``"fig"`` (inline) or ``"gen"`` (block).
    line : int
        1-based line of the opening marker.
    start, end : int
        Offsets of the marked text in the document (``text[start:end]`` is what it shows).
    """

    key: str
    kind: str
    line: int
    start: int
    end: int

    def shown(self, text: str) -> str:
        """The text the document shows between this marker's comments."""
        return text[self.start:self.end]


@dataclass(frozen=True)
class Problem:
    """A marker whose text is not what the code gives now (or whose key is unknown)."""

    path: str
    line: int
    key: str
    shown: str
    now: str | None
    reason: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}: {self.key}"
        if self.now is None:
            return f"{where}: {self.reason}"
        if "\n" in self.shown.rstrip("\n") or "\n" in self.now.rstrip("\n"):  # a block: the lines that differ
            import difflib
            diff = list(difflib.unified_diff(self.shown.splitlines(), self.now.splitlines(), "shown", "now",
                                             lineterm="", n=0))[2:]
            more = f"\n    ... {len(diff) - 30} more lines" if len(diff) > 30 else ""
            return f"{where}: {self.reason}\n" + "\n".join("    " + _clip(d, 300) for d in diff[:30]) + more
        return f"{where}: {self.reason}\n    shown: {_clip(self.shown)}\n    now:   {_clip(self.now)}"


def _clip(s: str, n: int = 400) -> str:
    s = s.replace("\n", "\\n")
    return s if len(s) <= n else s[:n] + f"... ({len(s)} characters)"


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _code_spans(text: str) -> list[tuple[int, int]]:
    """Offsets of fenced code blocks and inline code spans: a marker written there is an example."""
    spans, pos, fence = [], 0, None
    for line in text.splitlines(keepends=True):
        if line.lstrip().startswith("```"):
            if fence is None:
                fence = pos
            else:
                spans.append((fence, pos + len(line)))
                fence = None
        elif fence is None:
            spans += [(pos + m.start(), pos + m.end()) for m in re.finditer(r"(`+)[^`\n]+?\1", line)]
        pos += len(line)
    if fence is not None:
        spans.append((fence, len(text)))
    return spans


def parse(text: str) -> list[Marker]:
    """The markers of a document, in order (those inside code, as examples, are not markers).

    Raises
    ------
    MarkerError
        On a block without its closing line, an inline marker left open, or a closing marker
        without its opening one (each names the line).

    Examples
    --------
    >>> doc = "a <!-- fig:x -->1.0<!-- /fig --> b\\n<!-- gen:t -->\\nrow\\n<!-- /gen:t -->\\n"
    >>> [(m.key, m.kind, m.line, m.shown(doc)) for m in parse(doc)]
    [('x', 'fig', 1, '1.0'), ('t', 'gen', 2, 'row\\n')]
    """
    markers: list[Marker] = []
    code = _code_spans(text)
    covered: list[tuple[int, int]] = list(code)  # blocks, inline markers and code: not strays
    for m in BLOCK_OPEN.finditer(text):
        if any(a <= m.start() < b for a, b in code):
            continue
        key = m.group("key")
        close = re.compile(rf"^<!-- /gen:{re.escape(key)} -->[ \t]*$", re.M)
        body = m.end() + 1 if m.end() < len(text) and text[m.end()] == "\n" else m.end()
        c = close.search(text, body)
        if c is None:
            raise MarkerError(f"line {_line_of(text, m.start())}: <!-- gen:{key} --> has no <!-- /gen:{key} -->")
        inner = next((i for i in BLOCK_OPEN.finditer(text, body, c.start())
                      if not any(a <= i.start() < b for a, b in code)), None)
        if inner is not None:
            raise MarkerError(f"line {_line_of(text, inner.start())}: a block opens inside <!-- gen:{key} -->")
        markers.append(Marker(key, "gen", _line_of(text, m.start()), body, c.start()))
        covered.append((m.start(), c.end()))
    for m in INLINE.finditer(text):
        if any(a <= m.start() < b for a, b in covered):
            continue  # a generated block's own text is not read for markers
        markers.append(Marker(m.group("key"), "fig", _line_of(text, m.start()), m.start("text"), m.end("text")))
        covered.append((m.start(), m.end()))
    for m in _ANY_MARKER.finditer(text):
        if not any(a <= m.start() < b for a, b in covered):
            raise MarkerError(f"line {_line_of(text, m.start())}: marker not closed or not opened: "
                              f"{text[m.start():m.start() + 60].splitlines()[0]!r}")
    return sorted(markers, key=lambda k: k.start)


def render(text: str, values: Mapping[str, str]) -> str:
    """``text`` with every marker whose key is in ``values`` showing that value.

    A block's value is written with a final newline, so its closing marker stays on its own line.

    Examples
    --------
    >>> render("x = <!-- fig:x -->1<!-- /fig -->", {"x": "2"})
    'x = <!-- fig:x -->2<!-- /fig -->'
    """
    out, pos = [], 0
    for m in parse(text):
        if m.key not in values:
            continue
        new = values[m.key]
        if m.kind == "gen" and not new.endswith("\n"):
            new += "\n"
        if m.kind == "fig" and "\n" in new:
            raise MarkerError(f"line {m.line}: inline figure {m.key} would span lines")
        out += [text[pos:m.start], new]
        pos = m.end
    return "".join(out) + text[pos:]


def _expected(m: Marker, value: str) -> str:
    return value if m.kind == "fig" or value.endswith("\n") else value + "\n"


def _cpu() -> float:
    """CPU seconds of this process and of the commands it ran (the CLI examples run as subprocesses)."""
    import resource
    ch = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + ch.ru_utime + ch.ru_stime


class Failed(Exception):
    """A figure that could not be computed: the original exception's type and message (picklable)."""


class Values:
    """Figure texts computed on demand, each once (``registry`` maps a key to its function)."""

    def __init__(self, registry: Mapping[str, Callable[[], str]]):
        self.registry = registry
        self.done: dict[str, str | Failed] = {}
        self.seconds: dict[str, float] = {}  # CPU seconds of each key's first computation (its shared runs included)

    def get(self, key: str) -> str | Failed | None:
        """The figure's text, the failure computing it, or None for an unknown key."""
        if key not in self.registry:
            return None
        if key not in self.done:
            t0 = _cpu()
            try:
                self.done[key] = self.registry[key]()
            except Exception as e:  # noqa: BLE001 - reported against the marker, the check goes on
                self.done[key] = Failed(f"{type(e).__name__}: {e}")
            self.seconds[key] = _cpu() - t0
        return self.done[key]

    def prefetch(self, keys: Iterable[str], workers: int = 2) -> None:
        """Compute ``keys`` in ``workers`` forked processes (serially where fork is missing or workers < 2).

        Keys that share simulations go to one process (:func:`_group`), so each simulation still
        runs once; the slowest groups start first.
        """
        todo = [k for k in dict.fromkeys(keys) if k in self.registry and k not in self.done]
        import multiprocessing as mp
        if workers < 2 or len(todo) < 2 or "fork" not in mp.get_all_start_methods():
            for k in todo:
                self.get(k)
            return
        groups: dict[str, list[str]] = {}
        for k in todo:
            groups.setdefault(_group(k), []).append(k)
        order = sorted(groups, key=lambda g: (_FIRST.index(g) if g in _FIRST else len(_FIRST), g))
        global _POOL_VALUES
        _POOL_VALUES = self
        try:
            with mp.get_context("fork").Pool(min(workers, len(order))) as pool:
                for done, seconds in pool.imap_unordered(_compute_group, [groups[g] for g in order]):
                    self.done.update(done)
                    self.seconds.update(seconds)
        finally:
            _POOL_VALUES = None


#: Key prefixes whose figures share simulations, computed in one process (the first match names the group).
_GROUPS = (("run.gpt3-175b", "gpt3"), ("studies.nic", "gpt3"), ("example.whatif", "gpt3"),
           ("run.llama3-405b", "llama3-405b"), ("training.llama3-405b", "llama3-405b"),
           ("plan.llama3-405b", "llama3-405b"), ("plan.gpt3-175b", "gpt3-best"), ("studies.pi", "pi"),
           ("training.b177b", "readme"))
#: The slowest groups, started first so the two processes finish together.
_FIRST = ("studies-table", "band-coverage", "gpt3-best", "gpt3", "example", "readme", "calibration", "scale", "training", "faults", "collectives")
_POOL_VALUES: Values | None = None


def _group(key: str) -> str:
    return next((g for prefix, g in _GROUPS if key.startswith(prefix)), key.split(".")[0])


def _compute_group(keys: list[str]) -> tuple[dict, dict]:
    """A pool task: the figures ``keys`` of the forked parent's :class:`Values`."""
    v = _POOL_VALUES
    for k in keys:
        v.get(k)
    return {k: v.done[k] for k in keys}, {k: v.seconds[k] for k in keys}


def check_text(text: str, path: str, values: Values, skip: Collection[str] = ()) -> list[Problem]:
    """Every marker of one document that differs from the code's figure, or cannot be computed
    (the keys in ``skip`` are left to another check)."""
    try:
        markers = parse(text)
    except MarkerError as e:
        return [Problem(path, 0, "-", "", None, str(e))]
    problems = []
    for m in markers:
        if m.key in skip:
            continue
        v = values.get(m.key)
        shown = m.shown(text)
        if v is None:
            problems.append(Problem(path, m.line, m.key, shown, None, "unknown figure (not in FIGURES)"))
        elif isinstance(v, Failed):
            problems.append(Problem(path, m.line, m.key, shown, None, f"cannot compute: {v}"))
        elif shown != _expected(m, v):
            problems.append(Problem(path, m.line, m.key, shown, _expected(m, v), "stale"))
    return problems


def write_text(text: str, values: Values) -> tuple[str, list[Problem]]:
    """``text`` with every computable marker refreshed, and the markers that could not be."""
    try:
        markers = parse(text)
    except MarkerError as e:
        return text, [Problem("", 0, "-", "", None, str(e))]
    new, problems = {}, []
    for m in markers:
        v = values.get(m.key)
        if isinstance(v, str):
            new[m.key] = v
        else:
            problems.append(Problem("", m.line, m.key, m.shown(text), None,
                                    "unknown figure (not in FIGURES)" if v is None else f"cannot compute: {v}"))
    return render(text, new), problems


def default_paths() -> list[Path]:
    """README.md and every page under docs/."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _rel(p: Path) -> str:
    try:
        return str(p.resolve().relative_to(ROOT))
    except ValueError:
        return str(p)


def _keys(paths: Iterable[Path]) -> list[str]:
    keys = []
    for p in paths:
        try:
            keys += [m.key for m in parse(Path(p).read_text())]
        except MarkerError:
            pass  # reported by the check itself
    return keys


def check(paths: Iterable[Path] | None = None, registry: Mapping[str, Callable[[], str]] | None = None,
          values: Values | None = None, workers: int = 2, skip: Collection[str] = ()) -> list[Problem]:
    """The stale, unknown and failing markers of ``paths`` (default: README.md and docs/*.md).

    The figures are computed in ``workers`` processes first (:meth:`Values.prefetch`); the keys in
    ``skip`` are neither computed nor checked (a test that already holds their inputs checks them).
    """
    paths = default_paths() if paths is None else [Path(p) for p in paths]
    values = values or Values(FIGURES if registry is None else registry)
    values.prefetch([k for k in _keys(paths) if k not in skip], workers)
    problems = []
    for p in paths:
        problems += check_text(p.read_text(), _rel(p), values, skip)
    return problems


def write(paths: Iterable[Path] | None = None, registry: Mapping[str, Callable[[], str]] | None = None,
          workers: int = 2) -> tuple[list[str], list[Problem]]:
    """Refresh every marker of ``paths``; returns the files changed and the markers left as they were."""
    paths = default_paths() if paths is None else [Path(p) for p in paths]
    values = Values(FIGURES if registry is None else registry)
    values.prefetch(_keys(paths), workers)
    changed, problems = [], []
    for p in paths:
        old = p.read_text()
        new, probs = write_text(old, values)
        problems += [Problem(_rel(p), q.line, q.key, q.shown, q.now, q.reason) for q in probs]
        if new != old:
            p.write_text(new)
            changed.append(_rel(p))
    return changed, problems


# --------------------------------------------------------------------------------------------
# The registry
# --------------------------------------------------------------------------------------------

#: KEY -> function returning the figure's text now.
FIGURES: dict[str, Callable[[], str]] = {}


def figure(key: str) -> Callable[[Callable[[], str]], Callable[[], str]]:
    """Register ``fn`` as the figure ``key`` (a decorator)."""
    def deco(fn: Callable[[], str]) -> Callable[[], str]:
        if key in FIGURES:
            raise ValueError(f"figure {key} registered twice")
        FIGURES[key] = fn
        return fn
    return deco


# -- shared computations (each memoised: one run serves every figure read from it) ------------

def _num(x: float, nd: int = 1) -> str:
    """``x`` with ``nd`` decimals and thousands separators: ``1,232.8``."""
    return f"{x:,.{nd}f}"


def _pct(x: float, nd: int = 1, sign: bool = True) -> str:
    """A fraction as a percentage, signed by default: ``-4.9%``."""
    return f"{x * 100:{'+' if sign else ''}.{nd}f}%"


@cache
def _run(name: str, overrides: tuple[str, ...] = (), fidelity: str | None = None) -> dict:
    """``clustersim run scenarios/NAME.yaml --set ... [--fidelity F] --json``, as a dict.

    The overrides go where the command's go (``clustersim.simulate.resolve``), so ``topology.*``
    and ``profile.*`` paths change the scenario's topology and profile files.
    """
    from clustersim.simulate.resolve import resolve_scenario
    from clustersim.simulate.run import run_scenario
    rs = resolve_scenario(ROOT / "scenarios" / f"{name}.yaml", list(overrides))
    res = run_scenario(rs, fidelity=fidelity) if fidelity else run_scenario(rs)
    return res.to_dict()


def _data(path: str) -> Path:
    """The repository file ``path``; FileNotFoundError (a figure that cannot be computed) when it is missing."""
    if not (ROOT / path).exists():
        raise FileNotFoundError(path)
    return ROOT / path


def _cli_env() -> dict[str, str]:
    env = dict(os.environ, COLUMNS="100", LINES="50", PYTHONUNBUFFERED="1", NO_COLOR="1", TERM="dumb",
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    env.pop("FORCE_COLOR", None)
    return env


@cache
def _cli_json(*args: str):
    """``clustersim ARGS --json`` run from the repository root, its JSON document."""
    import json
    p = subprocess.run([sys.executable, "-m", "clustersim", *args, "--json"], cwd=ROOT, env=_cli_env(), text=True,
                       capture_output=True, timeout=600)
    if p.returncode != 0:
        raise RuntimeError(f"clustersim {' '.join(args)} exited {p.returncode}: {p.stderr[-2000:]}")
    return json.loads(p.stdout)


#: Lines of command output that hold a wall time, and what replaces it (a figure never times a clock).
_WALL = [(re.compile(r"(re-ranked at flow|analytical only); [0-9.]+ s"), r"\1; <wall time>"),
         (re.compile(r"([0-9.]+ points/s|ETA) [0-9:]+"), r"\1 <wall time>")]


def _normalise(out: str) -> str:
    """Command output as a document shows it: trailing blanks off, wall times replaced."""
    for pat, rep in _WALL:
        out = pat.sub(rep, out)
    return "\n".join(line.rstrip() for line in out.strip("\n").splitlines())


@cache
def _cli(*commands: str) -> str:
    """``commands`` (``clustersim ...`` lines) run in order in one scratch folder, as a console block.

    The folder links the repository's data folders, so the commands read as a user would type
    them from a clone; stdout and stderr are shown together, in the order they were written, at
    a 100-column terminal.
    """
    import shlex
    import tempfile
    env = _cli_env()
    shown = []
    with tempfile.TemporaryDirectory(prefix="doc-figures-") as tmp:
        for d in ("scenarios", "topologies", "tests", "calibrate", "profiles", "validation"):
            if (ROOT / d).exists():
                os.symlink(ROOT / d, Path(tmp) / d)
        for cmd in commands:
            run, _, head = cmd.partition(" | head -")  # `| head -N` keeps the first N lines, as the shell would
            args = shlex.split(run)
            if args[0] != "clustersim":
                raise ValueError(f"not a clustersim command: {cmd}")
            p = subprocess.run([sys.executable, "-m", "clustersim", *args[1:]], cwd=tmp, env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
            if p.returncode != 0:
                raise RuntimeError(f"{cmd} exited {p.returncode}: {p.stdout[-2000:]}")
            out = "\n".join(p.stdout.splitlines()[:int(head)]) if head else p.stdout
            shown += [f"$ {cmd}", _normalise(out)]
    return "```console\n" + "\n".join(s for s in shown if s) + "\n```\n"


def _module(path: Path, name: str):
    """The Python file ``path`` loaded as module ``name`` (tools/ and tests/ are not packages)."""
    if name in sys.modules:
        return sys.modules[name]
    if path.parent.parent == ROOT / "tests" and str(ROOT / "tests") not in sys.path:
        sys.path.insert(0, str(ROOT / "tests"))  # a test module imports the tests' helpers (checks.py)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # dataclasses look their module up there
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        del sys.modules[name]
        raise
    return mod


def _studies():
    """``tools/studies.py`` (the validation index), loaded only when a document asks for it."""
    path = ROOT / "tools" / "studies.py"
    if not path.exists():
        raise FileNotFoundError("tools/studies.py missing")
    return _module(path, "clustersim_tools_studies")


@figure("studies-table")
def _studies_table() -> str:
    return _studies().index_table().rstrip("\n") + "\n"


@figure("band-coverage")
def _band_coverage() -> str:
    return _studies().band_coverage_table()


# -- README.md: the headline accuracy rows (one number each) --------------------------------------

@cache
def _a100_heldout() -> float:
    """Mean |error| at >= 1 MiB of the 32-GPU A100 all_reduce log, held out of azure-ndv4's link-model fit."""
    from clustersim.calibration.fit import read_measurements
    from clustersim.calibration.transfer_report import model_rows
    log = _data("validation/a100-link-model-32gpu-heldout_a100-azure-ndv4_2026-11-26/all_reduce_32.log")
    rows = [r for r in model_rows(read_measurements([str(log)]).rows) if r["size_bytes"] >= MiB]
    m = _model("azure-ndv4", gpus=32)
    err = [abs(m.estimate("all_reduce", 32, r["size_bytes"]).time_s * 1e6 / r["time_us"] - 1) for r in rows]
    return sum(err) / len(err)


FIGURES["readme.a100-heldout"] = lambda: _pct(_a100_heldout(), sign=False)


def _train_rows(path: Path) -> list[dict]:
    import json
    rows = []
    for line in path.read_text().splitlines():
        r = json.loads(line) if line.strip() else {}
        if r.get("kind") == "train_step" and r.get("status") == "ok":
            rows.append(r)
    return rows


@cache
def _gpu_bound_errors() -> tuple[float, ...]:
    """Predicted / measured - 1 of every row of the GPU-bound reference set (analytical; its flow agrees within 1%)."""
    old = ROOT / "tests" / "data" / "real_gpu" / "gpu-bound-train_steps.jsonl"
    if old.exists():
        rows = [(r["scenario"], tuple(r["overrides"]), float(r["step_time_s"])) for r in _train_rows(old)]
    else:  # the study folder's expect.yaml selects the rows from the sets that measured them
        st = _studies()
        study = st.load(ROOT / "validation" / "gpu-bound-set_h200-h100_2026-11-25")
        rows = [(r["scenario"], tuple(r["overrides"]), r["measured_s"])
                for r in st.check_rows(study, study.checks[0]).values()]
    return tuple(_run(name, ov, "analytical")["step_time_s"] / t - 1 for name, ov, t in rows)


def _within(errs, tol: float) -> str:
    return f"{sum(abs(e) <= tol for e in errs)} of {len(errs)}"


FIGURES["readme.gpu-bound"] = lambda: _within(_gpu_bound_errors(), 0.10)


@cache
def _blind16_memory() -> tuple[float, ...]:
    """Predicted / measured - 1 of the peak allocated memory of blind set 16 (4x H100, predicted before measuring)."""
    from clustersim.simulate.resolve import resolve_scenario
    from clustersim.workload.compute import ComputeModel
    from clustersim.workload.transformer import TransformerStep
    path = _data("validation/blind16-memory-4gpu_h100x4_2026-11-27/train_steps.jsonl")
    out = []
    for r in _train_rows(path):
        if not r.get("peak_memory_bytes"):
            continue
        # reference/train_gpt.py runs plain PyTorch kernels (tests/integration/test_memory_real.py)
        rs = resolve_scenario(ROOT / r["scenario_file"], list(r["overrides"]) + ["training.kernel_fusion=none"])
        cm = ComputeModel.from_profile(rs.profile.compute, rs.cluster.gpu_spec, rs.scenario.training.precision.params)
        peak = TransformerStep(rs.scenario, cm).memory(rs.cluster.gpu_spec.hbm_bytes)["peak_allocated_bytes"]
        out.append(peak / r["peak_memory_bytes"] - 1)
    return tuple(out)


FIGURES["readme.blind16-memory"] = lambda: (
    f"{_within(_blind16_memory(), 0.01)} within 1%")


@cache
def _published() -> tuple[tuple[str, float], ...]:
    """(row id, predicted / reported step - 1) of the published training runs (tests/integration/test_published_runs.py)."""
    mod = _module(ROOT / "tests" / "integration" / "test_published_runs.py", "clustersim_doc_published_runs")
    from clustersim.simulate.run import run_scenario
    return tuple((row[0], run_scenario(mod.scenario_of(row), fidelity="analytical").step_time_s / row[-1] - 1)
                 for row in mod.ROWS)


FIGURES["training.b177b"] = lambda: (lambda e: f"{abs(e) * 100:.0f}% {'fast' if e < 0 else 'slow'}")(
    dict(_published())["B177B"])
FIGURES["readme.published"] = lambda: _within([e for _, e in _published()], 0.15)


def _devset():
    """The published development set's module (validation/published-devset_*/devset.py): its committed predictions,
    which tests/integration/test_published_devset.py holds equal to what the code gives now."""
    return _module(ROOT / "validation" / "published-devset_h100-b200-gb200_2026-12-02" / "devset.py",
                   "clustersim_doc_devset")


def _devset_summary() -> str:
    d = _devset()
    err = d.step_errors(d.committed())
    return f"MAPE {_pct(d.mape(err.values()), sign=False)}; {_within(err.values(), 0.15)} within 15%"


FIGURES["readme.devset"] = _devset_summary
FIGURES["validation.devset-table"] = lambda: (lambda d: d.group_table(d.committed()) + "\n")(_devset())

#: Megatron-Bridge 25.09's DeepSeek-V3 on 1,024 H100 (tokens/s/GPU) and Llama 3 405B at 128K (TFLOP/s/GPU).
_DSV3_PUBLISHED, _CP_PUBLISHED = 1297.0, 380.0


def _dsv3() -> float:
    d = _run("deepseek-v3-h100")
    return d["tokens_per_s"] / d["n_gpus"]


def _cp405() -> float:
    return _run("llama3-405b-128k")["tflops_per_gpu"]


FIGURES["readme.dsv3"] = lambda: f"{_num(_dsv3())} ({_pct(_dsv3() / _DSV3_PUBLISHED - 1)})"
FIGURES["readme.cp405"] = lambda: f"{_num(_cp405())} ({_pct(_cp405() / _CP_PUBLISHED - 1)})"


# -- README.md: the worked examples --------------------------------------------------------------

_HALF = "--set topology.node.nic_speed_Gbps=200 --set topology.cluster.fabric.link_speed_Gbps=200"
FIGURES["example.plan"] = lambda: _cli("clustersim plan scenarios/hybrid-tp2-pp2-dp2.yaml --top 3 --workers 1")
FIGURES["example.whatif"] = lambda: _cli(f"clustersim run scenarios/gpt3-175b.yaml --fidelity analytical {_HALF} | head -7")
FIGURES["example.calibrate"] = lambda: _cli(
    "clustersim calibrate import-nccl-tests tests/data/h200x2/nt_all_reduce.txt -o nt.jsonl",
    "clustersim calibrate fit nt.jsonl --topology hgx-h200 -o my-h200.yaml",
    "clustersim collective all_reduce --topology hgx-h200 --gpus 2 --profile my-h200.yaml --size 1GiB")
FIGURES["example.whatif.full"] = lambda: f"{_nic(400, 'analytical')['step_time_s']:.3f} s"
FIGURES["example.whatif.half"] = lambda: f"{_nic(200, 'analytical')['step_time_s']:.3f} s"
FIGURES["example.whatif.growth"] = lambda: _pct(
    _nic(200, "analytical")["step_time_s"] / _nic(400, "analytical")["step_time_s"] - 1)
FIGURES["example.whatif.dp"] = lambda: (f"{_nic(400, 'analytical')['breakdown']['comm_dp'] * 1e3:.0f} → "
                                        f"{_nic(200, 'analytical')['breakdown']['comm_dp'] * 1e3:.0f} ms")
FIGURES["example.plan.shipped"] = lambda: f"{_run('hybrid-tp2-pp2-dp2')['step_time_s'] * 1e3:.1f} ms"


# -- docs/inputs.md ----------------------------------------------------------------------------

FIGURES["inputs.from-hf"] = lambda: _cli(
    "clustersim scenario from-hf tests/data/importers/hf/DeepSeek-V3.json --nodes 32 --pp 8 --ep 32 "
    "--global-batch 256 -o dsv3.yaml",
    "clustersim run dsv3.yaml --fidelity analytical | head -9")
FIGURES["inputs.from-megatron"] = lambda: _cli(
    "clustersim scenario from-megatron tests/data/importers/megatron/train_gpt3_175b_distributed.sh --nodes 128 "
    "-o gpt3.yaml")
FIGURES["inputs.compare"] = lambda: _cli(
    "clustersim compare scenarios/ref-single.yaml tests/data/logs --fidelity analytical")


# -- docs/training.md --------------------------------------------------------------------------

@figure("training.ref-single.duty")
def _ref_duty() -> str:
    return f"{_run('ref-single')['compute_duty']:.2f}"


@figure("training.ref-single.clock")
def _ref_clock() -> str:
    return f"x{_run('ref-single')['clock_slowdown']:.2f}"


def _two_jobs(part: str) -> str:
    job = _run("two-jobs-shared-fabric")["jobs"][0]
    if part == "slowdown":
        return f"x{job['slowdown']:.3f}"
    return f"{job[part] * 1e3:.0f} ms"


FIGURES["training.two-jobs.step"] = lambda: _two_jobs("step_time_s")
FIGURES["training.two-jobs.alone"] = lambda: _two_jobs("alone_step_time_s")
FIGURES["training.two-jobs.slowdown"] = lambda: _two_jobs("slowdown")


def _llama405_memory() -> dict:
    return _run("llama3-405b", (), "analytical")["memory"]


FIGURES["training.llama3-405b.peak"] = lambda: f"{_llama405_memory()['peak_bytes_per_gpu'] / 1e9:.0f} GB"
FIGURES["training.llama3-405b.peak-stage"] = lambda: f"stage {_llama405_memory()['stage']}"
FIGURES["training.llama3-405b.capacity"] = lambda: f"{_llama405_memory()['capacity_bytes'] / 1e9:.0f} GB"

# the speed benchmark's cases (benchmarks/bench_training.py): their step and MFU now
for _name, _fid in [("gpt3-175b", "analytical"), ("gpt3-175b", "flow"), ("llama3-405b", "analytical")]:
    FIGURES[f"run.{_name}.{_fid}.step"] = (lambda n=_name, f=_fid: f"{_run(n, (), f)['step_time_s']:.3f}")
    FIGURES[f"run.{_name}.{_fid}.mfu"] = (lambda n=_name, f=_fid: _pct(_run(n, (), f)["mfu"], sign=False))


def _symmetry_case(topology: str = "dgx-h100-superpod", **par):
    """The 256-GPU case of tests/integration/test_run_symmetry.py (16 layers, h 4096, GBS 64)."""
    from clustersim.config.scenario import Scenario
    p = {"tp": 8, "pp": 4, "dp": 8, "sequence_parallel": True, "schedule": "1f1b", "zero": 1}
    p.update(par)
    return Scenario.model_validate({
        "name": "sym-256", "cluster": {"topology": topology, "nodes": 32,
                                       "profile": str(ROOT / "tests" / "data" / "training" / "profile-defaults.yaml")},
        "model": {"layers": 16, "hidden": 4096, "heads": 32, "vocab": 32000, "seq_len": 2048},
        "training": {"global_batch": 64, "micro_batch": 1},
        "parallelism": p,
    })


@cache
def _symmetry(case: tuple[tuple[str, object], ...]) -> tuple[float, float, int, int]:
    """(reduced step, full step, reduced ops, full ops) at flow fidelity for one symmetry case."""
    from clustersim.simulate.resolve import resolve_scenario
    from clustersim.simulate.run import run_scenario
    rs = resolve_scenario(_symmetry_case(**dict(case)))
    red = run_scenario(rs, fidelity="flow", reduced=True)
    full = run_scenario(rs, fidelity="flow", reduced=False)
    return red.step_time_s, full.step_time_s, red.ops, full.ops


_SYMMETRY_ROWS = [
    ("dgx-h100-superpod, TP8 PP4 DP8, ZeRO-1", ()),
    ("dgx-h100-superpod, TP8 PP4 DP8, DDP (100 MB buckets)", (("zero", 0), ("ddp_bucket_mb", 100))),
]


@figure("training.symmetry-table")
def _symmetry_table() -> str:
    rows = ["| case (256 GPUs, 16 layers, h 4096, GBS 64) | reduced step (s) | full step (s) | difference | "
            "ops reduced / full |", "|---|---|---|---|---|"]
    for label, case in _SYMMETRY_ROWS:
        red, full, ro, fo = _symmetry(case)
        rows.append(f"| {label} | {red:.5f} | {full:.5f} | {_pct(red / full - 1, 2)} | {ro:,} / {fo:,} |")
    return "\n".join(rows) + "\n"


# -- docs/calibration.md (written with helper docscal, who owns that page) -----------------------

@cache
def _profile(name: str) -> dict:
    """A shipped profile, parsed (its new home, then its old one)."""
    import yaml
    return yaml.safe_load(_data(f"profiles/{name}.yaml").read_text())


def _factor(name: str, *path: str) -> str:
    d = _profile(name)
    for p in path:
        d = d[p]
    return f"{d:.3f}"


for _name in ("hgx-h200", "dgx-a100", "azure-ndv4"):
    figure(f"calibration.band-{_name}")(lambda n=_name: _factor(n, "uncertainty", "time_factor"))
for _name in ("hgx-h200", "dgx-h100"):
    figure(f"calibration.host-band-{_name}")(lambda n=_name: _factor(n, "host", "speed_band", "time_factor"))


@figure("calibration.link-model-hgx-h200")
def _link_model_section() -> str:
    """The ``link_model:`` section of the shipped hgx-h200 profile as the file holds it, up to its provenance."""
    lines = _data("profiles/hgx-h200.yaml").read_text().splitlines()
    start = lines.index("link_model:")
    end = next(i for i in range(start + 1, len(lines)) if lines[i][:1].isalpha() or lines[i] == "  provenance:")
    return "```yaml\n" + "\n".join(lines[start:end]) + "\n```\n"


@figure("calibration.collective-band")
def _collective_band() -> str:
    """``python profiles/collective_band.py``: the held-out collective error of the shipped model (~15 s)."""
    script = _data("profiles/collective_band.py")
    p = subprocess.run([sys.executable, str(script)], cwd=ROOT, env=_cli_env(), text=True, capture_output=True,
                       timeout=600)
    if p.returncode != 0:
        raise RuntimeError(f"{script.name} exited {p.returncode}: {p.stderr[-2000:]}")
    return "```\n" + _normalise(p.stdout) + "\n```\n"


_HALF_NET = """extends: dgx-a100-superpod
name: a100-half-net
node: {nic_speed_Gbps: 100}
cluster: {fabric: {link_speed_Gbps: 100}}
"""


@figure("calibration.whatif-half-network")
def _whatif_half_network() -> str:
    """One source of bandwidth: a 1 GiB all_reduce on 8 DGX A100 nodes, then at half the network line rate."""
    import shlex
    import tempfile
    commands = ("clustersim collective all_reduce -t dgx-a100-superpod --nodes 8 --size 1GiB",
                "clustersim collective all_reduce -t a100-half-net.yaml --nodes 8 --size 1GiB",
                "clustersim collective all_reduce -t a100-half-net.yaml --nodes 8 --size 1GiB --fidelity flow")
    shown = []
    with tempfile.TemporaryDirectory(prefix="doc-figures-") as tmp:
        (Path(tmp) / "a100-half-net.yaml").write_text(_HALF_NET)   # the variant the page shows above the block
        for cmd in commands:
            p = subprocess.run([sys.executable, "-m", "clustersim", *shlex.split(cmd)[1:]], cwd=tmp, env=_cli_env(),
                               text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
            if p.returncode != 0:
                raise RuntimeError(f"{cmd} exited {p.returncode}: {p.stdout[-2000:]}")
            shown += [f"$ {cmd}", _normalise(p.stdout)]
    return "```console\n" + "\n".join(shown) + "\n```\n"


# -- docs/collectives.md -----------------------------------------------------------------------

GiB, MiB = 2**30, 2**20


@cache
def _model(topology: str, entries: bool = True, nvls: bool | None = None, p2p: bool = True, links: bool = True,
           **kw):
    """``CollectiveModel`` of a shipped topology with its default profile (``entries=False``: without the
    profile's fitted collectives and link model, NCCL's structure alone; ``links=False``: without its
    link-class efficiencies either, NCCL's constants)."""
    from clustersim.collectives import CollectiveModel, load_profile_for
    from clustersim.topology import load_cluster
    c = load_cluster(topology, **kw)
    p = load_profile_for(c)
    if not entries:
        p = p.model_copy(update={"collectives": [], "link_model": None})
    if not links:
        p = p.model_copy(update={"links": {}})
    return CollectiveModel(c, p, nvls=nvls, p2p=p2p)


def _size(b: int) -> str:
    for unit, f in (("GiB", GiB), ("MiB", MiB), ("KiB", 1024)):
        if b >= f:
            return f"{b // f} {unit}"
    return f"{b} B"


def _tag(r, time: bool = False) -> str:
    """`` (ring/LL)``-style annotation of a result's algorithm and protocol (NVLS: the algorithm alone)."""
    alg = {"nvls": "NVLS", "nvls_tree": "NVLSTree"}.get(r.algorithm)
    inner = alg or f"{r.algorithm}/{r.protocol.upper() if r.protocol in ('ll', 'll128') else r.protocol}"
    return f" ({inner}" + (f", {r.time_s * 1e6:.1f} µs)" if time else ")")


#: Published busbw (GB/s) of table (a): ring (nccl#1455) and NVLS on (Azure ND H100 v5, tests#212).
_A_PUBLISHED = {MiB: ("—", "43.7 (Azure ND H100 v5, NVLS)"), 16 * MiB: ("—", "—"), 64 * MiB: ("—", "361.8 (Azure)"),
                GiB: ("—", "466.4 (Azure)"), 2 * GiB: ("**365-370** (nccl#1455)", "472.4 (Azure)"),
                4 * GiB: ("**365-370** (nccl#1455)", "475.5 (Azure)"),
                8 * GiB: ("365-370", "**478.9** (Azure), 480 (tests#212)")}


@figure("collectives.h100-table")
def _h100_table() -> str:
    m = _model("dgx-h100")
    rows = ["| size | ring (NVLS off) busbw, predicted | published | auto (NVLS on) busbw | published |",
            "|---:|---:|---:|---:|---:|"]
    for size, (pub_ring, pub_auto) in _A_PUBLISHED.items():
        ring, auto = m.estimate("all_reduce", 8, size, algorithm="ring"), m.estimate("all_reduce", 8, size)
        small = size < 64 * MiB
        rows.append(f"| {_size(size)} | {ring.busbw_GBps:.1f}{_tag(ring, size == MiB) if small else ''} | {pub_ring} | "
                    f"{auto.busbw_GBps:.1f}{_tag(auto) if small else ''} | {pub_auto} |")
    return "\n".join(rows) + "\n"


FIGURES["collectives.h100-ring-vs-365"] = lambda: f"{max(abs(_model('dgx-h100').estimate('all_reduce', 8, s, algorithm='ring').busbw_GBps / 365 - 1) for s in (2 * GiB, 4 * GiB, 8 * GiB)) * 100:.0f}%"


@cache
def _h200_log() -> tuple[dict, ...]:
    """The out-of-place rows of the real 2x H200 nccl-tests all_reduce log."""
    from clustersim.calibration.nccl_tests import parse_nccl_tests_log
    rows = parse_nccl_tests_log(_data("tests/data/h200x2/nt_all_reduce.txt"))
    return tuple(r for r in rows if r.get("kind") == "collective" and not r["inplace"])


def _h200_errors(entries: bool) -> list[float]:
    m = _model("hgx-h200", entries=entries, gpus=2)
    return [abs(m.estimate("all_reduce", 2, r["size_bytes"]).time_s * 1e6 - r["time_us"]) / r["time_us"]
            for r in _h200_log() if MiB <= r["size_bytes"] <= 4 * GiB]


FIGURES["collectives.h200-log.mean"] = lambda: _pct(sum(_h200_errors(True)) / len(_h200_errors(True)), sign=False)
FIGURES["collectives.h200-log.max"] = lambda: _pct(max(_h200_errors(True)), sign=False)
FIGURES["collectives.h200-log.model-mean"] = lambda: _pct(
    sum(_h200_errors(False)) / len(_h200_errors(False)), 0, sign=False)
FIGURES["collectives.h200-floor"] = lambda: f"{_model('hgx-h200', gpus=2).estimate('all_reduce', 2, 8).time_s * 1e6:.1f} µs"


FIGURES["collectives.h200-bare-4g"] = lambda: (
    f"{_model('hgx-h200', entries=False, gpus=2).estimate('all_reduce', 2, 4 * GiB).busbw_GBps:.0f}")


def _h200_floor_vs_log() -> str:
    """The model's all_reduce floor against the median nccl-tests time up to 4 KiB (host-bound there)."""
    import statistics
    log = statistics.median(r["time_us"] for r in _h200_log() if r["size_bytes"] <= 4096)
    return _pct(_model("hgx-h200", gpus=2).estimate("all_reduce", 2, 8).time_s * 1e6 / log - 1, 0)


FIGURES["collectives.h200-floor-vs-log"] = _h200_floor_vs_log
FIGURES["collectives.model-check.sr4-16m"] = lambda: _pct(
    next(p[-1] for p in _model_check(4) if p[0] == "send_recv" and p[1] == 16 * MiB), 0)


@figure("collectives.h200-log-table")
def _h200_log_table() -> str:
    shipped, bare = _model("hgx-h200", gpus=2), _model("hgx-h200", entries=False, gpus=2)
    log = {r["size_bytes"]: r for r in _h200_log()}
    rows = ["| size | measured µs / busbw | shipped profile µs / busbw | NCCL model only µs / busbw |",
            "|---:|---:|---:|---:|"]
    for size in (8, MiB, 4 * MiB, 16 * MiB, 64 * MiB, 256 * MiB, GiB, 4 * GiB):
        r, a, b = log[size], shipped.estimate("all_reduce", 2, size), bare.estimate("all_reduce", 2, size)
        if size == 8:
            cells = [f"{r['time_us']:g} / 0.00", f"{a.time_s * 1e6:.1f}", f"{b.time_s * 1e6:.1f}{_tag(b)}"]
        else:
            cells = [f"{r['time_us']:g} / {r['busbw_GBps']:.1f}", f"{a.time_s * 1e6:.1f} / {a.busbw_GBps:.1f}",
                     f"{b.time_s * 1e6:.1f} / {b.busbw_GBps:.1f}{_tag(b) if size == MiB else ''}"]
        rows.append(f"| {_size(size)} | " + " | ".join(cells) + " |")
    e, f = _h200_errors(True), _h200_errors(False)
    rows.append(f"| **mean / max relative time error, 1 MiB..4 GiB** | | **{_pct(sum(e) / len(e), sign=False)} / "
                f"{_pct(max(e), sign=False)}** | **{_pct(sum(f) / len(f), sign=False)} / {_pct(max(f), sign=False)}** |")
    return "\n".join(rows) + "\n"


_CHECK_OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send_recv")
_CHECK_SIZES = (MiB, 16 * MiB, 256 * MiB, 4 * GiB)


@cache
def _model_check(n: int) -> tuple[tuple, ...]:
    """(op, size, measured us, measured busbw, model us, model busbw, alg/proto, error) per point: NCCL's
    structure alone (no profile entries) against the CUDA-graph bench on n H200, the model's kernel gap off."""
    import json
    path = _data(f"profiles/measurements/h200x{n}/bench-graph.jsonl")
    meas = {}
    for line in path.read_text().splitlines():
        r = json.loads(line)
        if r.get("kind") == "collective" and r.get("mode") == "nccl":
            meas[(r["op"], r["size_bytes"])] = r
    m = _model("hgx-h200", entries=False, gpus=n)
    out = []
    for op in _CHECK_OPS:
        for size in _CHECK_SIZES:
            r, t = m.estimate(op, n, size), meas[(op, size)]
            us = (r.time_s - m.launch_s) * 1e6
            bus_us = r.busbw_GBps * r.time_s * 1e6  # busbw x time: the op's bus bytes (nccl-tests factor), in GB.us
            out.append((op, size, t["time_us"], bus_us / t["time_us"], us, bus_us / us,
                        f"{r.algorithm}/{r.protocol}", us / t["time_us"] - 1))
    return tuple(out)


@figure("collectives.model-check-table")
def _model_check_table() -> str:
    rows = ["| ranks | op | size | measured µs (busbw) | model µs (busbw) | alg/proto | error |",
            "|---|---|---|---|---|---|---|"]
    for n in (2, 4):
        for op, size, mus, mbw, us, bw, ap, err in _model_check(n):
            rows.append(f"| {n} | {op} | {_size(size)} | {mus:.1f} ({mbw:.0f}) | {us:.1f} ({bw:.0f}) | {ap} | "
                        f"{_pct(err)} |")
    return "\n".join(rows) + "\n"


for _n in (2, 4):
    FIGURES[f"collectives.model-check.mean{_n}"] = (
        lambda n=_n: _pct(sum(abs(p[-1]) for p in _model_check(n)) / len(_model_check(n)), sign=False))


@figure("collectives.superpod-table")
def _superpod_table() -> str:
    m2, m4 = _model("dgx-h100-superpod", nodes=2), _model("dgx-h100-superpod", nodes=4)
    a8, a1 = m2.estimate("all_reduce", 16, 8 * GiB), m2.estimate("all_reduce", 16, GiB)
    ring, four = m2.estimate("all_reduce", 16, 8 * GiB, algorithm="ring"), m4.estimate("all_reduce", 32, 8 * GiB)
    return "\n".join([
        "| case | predicted busbw | published |", "|---|---:|---:|",
        f"| auto, 8 GiB{_tag(a8)} | {a8.busbw_GBps:.1f} | ~470 (tests#309); 350 avg 32M-2G bare metal H200 (tests#256) |",
        f"| auto, 1 GiB | {a1.busbw_GBps:.1f} | |",
        f"| ring forced, 8 GiB | {ring.busbw_GBps:.1f} | 330-380 ring / non-SHARP (nccl#1221, nccl#1649) |",
        f"| 4 nodes, auto, 8 GiB | {four.busbw_GBps:.1f} | 365.8 (tests#309) |"]) + "\n"


def _log_busbw(name: str, sizes: tuple[int, ...]) -> str:
    from clustersim.calibration.nccl_tests import parse_nccl_tests_log
    rows = parse_nccl_tests_log(_data(f"profiles/measurements/a100-azure-ndv4/{name}"))
    bw = {r["size_bytes"]: r["busbw_GBps"] for r in rows if r.get("kind") == "collective" and not r["inplace"]}
    return " / ".join(f"{bw[s]:.1f}" for s in sizes)


@figure("collectives.other-logs-table")
def _other_logs_table() -> str:
    a8, a16, pcie = _model("dgx-a100"), _model("dgx-a100", nodes=2), _model("h100-pcie-4gpu", gpus=2)

    def pred(m, n, sizes):
        return " / ".join(f"{m.estimate('all_reduce', n, s).busbw_GBps:.1f}" for s in sizes)
    big, small = (256 * MiB, GiB), (MiB, 16 * MiB)
    return "\n".join([
        "| case | measured busbw | predicted |", "|---|---:|---:|",
        f"| 8×A100 (Azure ND A100 v4, `dgx-a100`), 256 MiB / 1 GiB | {_log_busbw('all_reduce_8.log', big)} | "
        f"{pred(a8, 8, big)} |",
        f"| 8×A100, 1 MiB / 16 MiB | {_log_busbw('all_reduce_8.log', small)} | {pred(a8, 8, small)} (mid-size "
        "optimism as above) |",
        f"| 2×8 A100 (HDR 200G per GPU, `dgx-a100 --nodes 2`), 256 MiB / 1 GiB | "
        f"{_log_busbw('all_reduce_16.log', big)} | {pred(a16, 16, big)} (that cluster reaches ~15.6 GB/s per "
        "200G NIC; the profile assumes 24, tests#119) |",
        f"| 2× H100 PCIe + bridge (`h100-pcie-4gpu --gpus 2`), 4 GiB | 115-116 (nccl#1161) | "
        f"{pcie.estimate('all_reduce', 2, 4 * GiB).busbw_GBps:.1f} (the topology's bridge counts 12 links; "
        "measured behaves like ~6) |"]) + "\n"


FIGURES["collectives.p2p.on"] = lambda: f"{_model('dgx-h100', nvls=False).estimate('all_reduce', 8, GiB).busbw_GBps:.0f}"
FIGURES["collectives.p2p.off"] = lambda: f"{_model('dgx-h100', nvls=False, p2p=False).estimate('all_reduce', 8, GiB).busbw_GBps:.0f}"
FIGURES["collectives.p2p.off-flow"] = lambda: (
    f"{_cli_json('collective', 'all_reduce', '--topology', 'dgx-h100', '--size', '1GiB', '--p2p', 'off', '--nvls', 'off', '--fidelity', 'flow')['busbw_GBps']:.0f}")


@cache
def _superpod_flow() -> dict:
    return _cli_json("collective", "all_reduce", "--topology", "dgx-h100-superpod", "--nodes", "128", "--size", "1GiB",
                     "--fidelity", "flow")


FIGURES["collectives.1024.flow.time"] = lambda: f"{_superpod_flow()['time_s'] * 1e3:.3f} ms"
FIGURES["collectives.1024.flow.busbw"] = lambda: f"{_superpod_flow()['busbw_GBps']:.1f} GB/s"
FIGURES["collectives.1024.flow.alg"] = lambda: f"[{_superpod_flow()['algorithm']}/{_superpod_flow()['protocol']}]"


# -- docs/topology.md --------------------------------------------------------------------------

@cache
def _flow_over_analytical(nodes: int, algorithm: str) -> float:
    """A 1 GiB all_reduce over the first 1,024 GPUs of ``dgx-h100-superpod --nodes N``: flow time / analytical."""
    from clustersim.collectives import load_profile_for
    from clustersim.collectives.flow import flow_simulation
    from clustersim.topology import load_cluster
    c = load_cluster("dgx-h100-superpod", nodes=nodes)
    sim = flow_simulation(c, load_profile_for(c), nvls=False)
    p = sim.collective("all_reduce", 1024, GiB, algorithm=algorithm)
    sim.env.run()
    return p.value.time_s / sim.collectives.model.estimate("all_reduce", 1024, GiB, algorithm=algorithm).time_s


FIGURES["topology.flow-tree-128"] = lambda: f"{_flow_over_analytical(128, 'tree'):.2f}×"
FIGURES["topology.flow-ring-128"] = lambda: f"{_flow_over_analytical(128, 'ring'):.2f}×"
FIGURES["topology.flow-tree-288"] = lambda: f"{_flow_over_analytical(288, 'tree'):.2f}×"


# -- docs/planning.md --------------------------------------------------------------------------

#: The planner's best mix for scenarios/gpt3-175b.yaml (``clustersim plan``, default space): the
#: figures below are that mix's analytical step and memory (its flow step takes 15 s of CPU, the search
#: itself a minute: neither is re-run here).
GPT3_BEST = ("parallelism.tp=2", "parallelism.pp=8", "parallelism.dp=64", "parallelism.schedule=zb_v",
             "parallelism.virtual_stages=2", "parallelism.sequence_parallel=true", "parallelism.zero=2",
             "training.micro_batch=1")

FIGURES["plan.gpt3-175b.best.analytical"] = lambda: (
    f"{_run('gpt3-175b', GPT3_BEST, 'analytical')['step_time_s']:.3f} s")
FIGURES["plan.gpt3-175b.best.gib"] = lambda: (
    f"{_run('gpt3-175b', GPT3_BEST, 'analytical')['memory']['peak_bytes_per_gpu'] / 2**30:.0f} GiB")
FIGURES["plan.gpt3-175b.shipped.analytical"] = lambda: f"{_run('gpt3-175b', (), 'analytical')['step_time_s']:.2f} s"
FIGURES["plan.llama3-405b.need"] = lambda: f"{_llama405_memory()['peak_bytes_per_gpu'] / 2**30:.1f} GiB"
FIGURES["plan.llama3-405b.activations"] = lambda: f"{_llama405_memory()['activations'] / 2**30:.0f} GiB"
FIGURES["plan.llama3-405b.stage"] = lambda: f"stage {_llama405_memory()['stage']}"
FIGURES["plan.llama3-405b.hbm"] = lambda: f"{_llama405_memory()['capacity_bytes'] / 2**30:.1f} GiB"


@cache
def _plan(name: str, top: int = 10):
    """``clustersim.plan.plan`` of a shipped scenario with the default space (one worker)."""
    from clustersim.plan import PlanOptions, plan
    return plan(str(ROOT / "scenarios" / f"{name}.yaml"), options=PlanOptions(workers=1, top=top))


FIGURES["plan.ref-tp2.evaluated"] = lambda: f"{_plan('ref-tp2').evaluated:,}"


# -- docs/studies.md ---------------------------------------------------------------------------

#: The planned-points study written out in docs/studies.md ("Planned points").
_PLAN_STUDY = """name: gpt-1b-plan
scenario: {root}/scenarios/gpt-1b-ddp.yaml
plan: true
set: {{simulation.fidelity: analytical}}
axes:
  - grid: {{cluster.gpus: [1, 2]}}
"""


@cache
def _plan_study_rows() -> tuple[dict, ...]:
    """The rows of ``clustersim sweep study-plan.yaml --executor serial`` (results.csv, as strings)."""
    import csv
    import tempfile
    from clustersim.sweep.runner import run_study
    with tempfile.TemporaryDirectory(prefix="doc-figures-") as tmp:
        study = Path(tmp) / "study-plan.yaml"
        study.write_text(_PLAN_STUDY.format(root=ROOT))
        run_study(study, Path(tmp) / "out", executor="serial")
        with open(Path(tmp) / "out" / "results.csv", newline="") as f:
            return tuple(csv.DictReader(f))


@figure("studies.plan-table")
def _plan_table() -> str:
    cols = ["n_gpus", "planned", "dp", "tp", "pp", "zero", "micro_batch", "step_time_s"]
    rows = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    rows += ["| " + " | ".join(r[c] for c in cols) + " |" for r in _plan_study_rows()]
    return "\n".join(rows) + "\n"


FIGURES["studies.plan-2gpu-run"] = lambda: repr(_run(
    "gpt-1b-ddp", ("cluster.gpus=2", "parallelism.zero=1", "simulation.fidelity=analytical"))["step_time_s"])

#: Measured times of the pi exercise on Cannon's A100s (speedup.txt; scenarios/study-pi-scaling.yaml).
_PI_A100 = {1: 45.151563, 2: 22.624692, 4: 11.396042, 8: 5.748150}


def _pi(gpus: int, scenario: str = "montecarlo-pi", profile: str | None = None) -> float:
    sets = [f"cluster.gpus={gpus}"] + ([f"cluster.profile={profile}"] if profile else [])
    return _run(scenario, tuple(sets))["step_time_s"]


@figure("studies.pi-table")
def _pi_table() -> str:
    rows = ["| GPUs | nodes | simulated T (s) | measured T (s) | simulated S | measured S | simulated E | measured E "
            "| measured − simulated |", "|---|---|---|---|---|---|---|---|---|"]
    t1, m1 = _pi(1), _PI_A100[1]
    for n, m in _PI_A100.items():
        t = _pi(n)
        rows.append(f"| {n} | {1 if n <= 4 else n // 4} | {t:.4f} | {m:.4f} | {t1 / t:.3f} | {m1 / m:.3f} | "
                    f"{t1 / (n * t):.4f} | {m1 / (n * m):.3f} | {(m - t) * 1e3:.0f} ms |".replace("| -", "| −"))
    return "\n".join(rows) + "\n"


def _pi_comm_us() -> str:
    """The range of the one 8-byte all-reduce's exposed time over the multi-GPU points, in us."""
    c = [_run("montecarlo-pi", (f"cluster.gpus={n}",))["breakdown"]["comm_dp"] * 1e6 for n in (2, 4, 8)]
    return f"{min(c):.0f}-{max(c):.0f} µs"


FIGURES["studies.pi-allreduce"] = _pi_comm_us

# the H100 runs predicted from the H200's profile, and the A100 exercise with the Hopper values
for _n in (2, 4):
    FIGURES[f"studies.pi-h100-from-h200.t{_n}"] = (
        lambda n=_n: f"{_pi(n, 'montecarlo-pi-h100', 'hgx-h200'):.4f} s")
    FIGURES[f"studies.pi-h100-from-h200.e{_n}"] = (
        lambda n=_n: f"{_pi(1, 'montecarlo-pi-h100', 'hgx-h200') / (n * _pi(n, 'montecarlo-pi-h100', 'hgx-h200')):.4f}")
#: The exercise's timed section measured on 1, 2, 4 H100 (medians; scenarios/study-pi-scaling-h100.yaml).
_PI_H100 = {1: 26.7013, 2: 13.3597, 4: 6.6931}
for _n in (2, 4):
    FIGURES[f"studies.pi-h100-from-h200.err{_n}"] = (
        lambda n=_n: _pct(_pi(n, 'montecarlo-pi-h100', 'hgx-h200') / _PI_H100[n] - 1, 2))
FIGURES["studies.pi-h100-own.t"] = lambda: " / ".join(f"{_pi(n, 'montecarlo-pi-h100'):.4f}" for n in (1, 2, 4))
FIGURES["studies.pi-h100-own.e"] = lambda: " / ".join(
    ("1" if n == 1 else f"{_pi(1, 'montecarlo-pi-h100') / (n * _pi(n, 'montecarlo-pi-h100')):.4f}") for n in (1, 2, 4))
for _n in (2, 4, 8):
    FIGURES[f"studies.pi-a100-hopper.e{_n}"] = (lambda n=_n: " / ".join(
        f"{_pi(1, profile=p) / (n * _pi(n, profile=p)):.4f}" for p in ("dgx-h100", "hgx-h200")))

#: NIC line rates of scenarios/study-nic-bandwidth.yaml shown in the docs (Gb/s per GPU; 400 is the preset's).
_NIC = (200, 300, 400)


def _nic(gbps: int, fidelity: str) -> dict:
    """GPT-3 175B with every NIC and fabric cable at ``gbps`` (400: the preset, the cached plain run)."""
    sets = () if gbps == 400 else (f"topology.node.nic_speed_Gbps={gbps}",
                                   f"topology.cluster.fabric.link_speed_Gbps={gbps}")
    return _run("gpt3-175b", sets, fidelity)


@figure("studies.nic-table")
def _nic_table() -> str:
    """Analytical: a flow step of this scenario is several CPU seconds (the preset's is in docs/training.md)."""
    rows = ["| NIC and fabric line rate per GPU | step, analytical (s) | exposed DP time (s) |", "|---|---|---|"]
    for g in (*_NIC, 800):
        a = _nic(g, "analytical")
        rows.append(f"| {g} Gb/s{' (the preset)' if g == 400 else ''} | {a['step_time_s']:.3f} | "
                    f"{a['breakdown']['comm_dp']:.3f} |")
    return "\n".join(rows) + "\n"


# -- docs/goodput-and-faults.md ----------------------------------------------------------------

_GOODPUT = ("clustersim goodput scenarios/llama3-405b.yaml --mtbf-gpu-hours 50677 --ckpt-write-GBps 2000 "
            "--restart-min 10 --run-days 54")


@cache
def _goodput_llama3() -> dict:
    """The closed-form part of the goodput example (its Monte-Carlo is in the example's own output)."""
    from clustersim.reliability import goodput as gp
    from clustersim.reliability.checkpoint import checkpoint_bytes
    from clustersim.simulate.resolve import resolve_scenario
    rs = resolve_scenario(ROOT / "scenarios" / "llama3-405b.yaml")
    m = gp.system_mtbf_s(n_gpus=rs.cluster.n_gpus, mtbf_gpu_hours=50677)
    case = dict(work_s=54 * gp.DAY, delta_s=checkpoint_bytes(rs.scenario) / 2000e9, restart_s=600.0, mtbf_s=m)
    best = gp.best_interval(**case)
    return {"best_s": best, "goodput": gp.goodput(interval_s=best, **case),
            "failures": gp.expected_wall_time(interval_s=best, **case) / m}


FIGURES["goodput.example"] = lambda: _cli(_GOODPUT).replace("```console", "```", 1)
FIGURES["goodput.llama3.best"] = lambda: f"{_goodput_llama3()['goodput'] * 100:.1f} %"
FIGURES["goodput.llama3.interval"] = lambda: f"{_goodput_llama3()['best_s'] / 60:.1f}-minute"
FIGURES["goodput.llama3.failures"] = lambda: f"~{round(_goodput_llama3()['failures'], -1):.0f}"


def _script(name: str):
    """A dev script of tools/, loaded as a module."""
    return _module(_data(f"tools/{name}.py"), f"clustersim_doc_{name}")


@figure("goodput.scaling-table")
def _goodput_scaling_table() -> str:
    """The closed-form columns of ``python tools/goodput_scaling.py`` (its constants).

    The script's Monte-Carlo column (400 runs per point, 14 s of CPU here) is left to the script;
    ``tests/unit/test_goodput.py`` checks that the Monte-Carlo interval contains the closed form.
    """
    from clustersim.reliability import goodput as gp
    g = _script("goodput_scaling")
    rows = ["| write | GPUs | system MTBF (h) | failures | best interval (min) | Young (min) | goodput |",
            "|---|---:|---:|---:|---:|---:|---:|"]
    for bw in (2e12, 2e11):
        for n in (1000, 2000, 4096, 8192, 16384, 32768, 65536, 100000):
            # goodput_report's closed-form part (its Monte-Carlo is the costly rest)
            m = gp.system_mtbf_s(n_gpus=n, mtbf_gpu_hours=g.MTBF_GPU_HOURS)
            case = dict(work_s=g.WORK_S, delta_s=g.CKPT_BYTES / bw, restart_s=g.RESTART_S, mtbf_s=m)
            best = gp.best_interval(**case)
            rows.append(f"| {bw / 1e9:g} GB/s | {n:,} | {m / 3600:.2f} | "
                        f"{gp.expected_wall_time(interval_s=best, **case) / m:.0f} | {best / 60:.2f} | "
                        f"{gp.young_interval(case['delta_s'], m) / 60:.2f} | {100 * gp.goodput(interval_s=best, **case):.2f} % |")
    return "\n".join(rows) + "\n"


#: A 1 GiB all-reduce between rank 0 (h0.gpu0) and rank 8 (h1.gpu0) of 2 DGX H100 (tests/unit/test_faults.py).
_PAIR = {"name": "pair", "cluster": {"topology": "dgx-h100", "nodes": 2},
         "job": {"phases": [{"name": "r", "collective": {"op": "all_reduce", "size": "1GiB", "group": [0, 8]}}]}}


def _both(link: str, f: float) -> list[dict]:
    a, b = link.split("->")
    return [{"link": link, "fraction": f}, {"link": f"{b}->{a}", "fraction": f}]


@cache
def _pair_slowdown(faults_json: str) -> float:
    import json
    from clustersim.config.scenario import Scenario
    from clustersim.simulate.run import run_scenario
    doc = dict(_PAIR, faults=json.loads(faults_json))
    return run_scenario(Scenario.model_validate(doc), fidelity="flow").to_dict()["faults"]["slowdown"]


def _straggled(name: str, stragglers: list[dict], sets: tuple[str, ...] = ()) -> dict:
    """The run of a shipped scenario with ``faults.stragglers`` set (its ``faults`` entry: slowdown, healthy step)."""
    import json
    return _run(name, sets + ("faults.stragglers=" + json.dumps(stragglers),))


def _straggler(name: str, stragglers: list[dict], sets: tuple[str, ...] = ()) -> dict:
    return _straggled(name, stragglers, sets)["faults"]


@figure("faults.table")
def _faults_table() -> str:
    import json

    def pair(faults) -> str:
        return _pair_slowdown(json.dumps(faults, sort_keys=True))

    def fmt(x: float) -> str:
        return f"{x:.3f}" if x < 2 else f"{x:.2f}"
    deg = " / ".join(fmt(pair({"link_degraded": _both("h0.nic0->leaf0", f)})) for f in (0.5, 0.2, 0.1))
    down = {"link_down": [{"link": "h0.nic0->leaf0"}]}
    ddp = " / ".join(fmt(_straggler("gpt-1b-ddp", [{"rank": 1, "slowdown": s}])["slowdown"]) for s in (1.3, 2.0))
    hy5 = _straggler("hybrid-tp2-pp2-dp2", [{"rank": 5, "slowdown": 1.5}])["slowdown"]
    hy0 = _straggler("hybrid-tp2-pp2-dp2", [{"rank": 0, "slowdown": 1.5}])["slowdown"]
    return "\n".join([
        "| scenario | fault | slowdown |", "|---|---|---:|",
        f"| 1 GiB all-reduce, ranks 0 and 8 of 2 x DGX H100 | `h0.nic0<->leaf0` at 0.5 / 0.2 / 0.1 | {deg} |",
        f"| same | `h0.nic0->leaf0` down (rerouted over rail 1) | {fmt(pair(down))} |",
        f"| same | down + `h0.nic1->leaf1` at 0.5 (the detour degraded) | "
        f"{fmt(pair(dict(down, link_degraded=_both('h0.nic1->leaf1', 0.5))))} |",
        f"| gpt-1b-ddp (2 x H200, DP 2) | rank 1 at 1.3 / 2.0 | {ddp} |",
        f"| hybrid-tp2-pp2-dp2 | rank 5 (pipeline stage 1) at 1.5 | {fmt(hy5)} |",
        f"| hybrid-tp2-pp2-dp2 | rank 0 (stage 0) at 1.5 | {fmt(hy0)} |"]) + "\n"


#: The FSDP2 host probe (h7-fsdp2: 32 layers, h 256, 2 H200) and the GPU-bound DDP row rg-ddp2.
_H7 = ("model.layers=32", "model.hidden=256", "model.heads=4", "model.ffn_hidden=1024", "model.seq_len=256",
       "training.micro_batch=1", "training.global_batch=4")
_RG = ("model.hidden=2048", "model.ffn_hidden=8192", "training.micro_batch=4", "training.global_batch=16")
_H7_SLOW, _RG_SLOW = [{"rank": 1, "host_slowdown": 1.5}], [{"rank": 1, "host_slowdown": 2.0}]
FIGURES["faults.host.fsdp2.healthy"] = lambda: (
    f"{_straggler('ref-fsdp2', _H7_SLOW, _H7)['healthy_step_time_s'] * 1e3:.1f}")
FIGURES["faults.host.fsdp2.slow"] = lambda: f"{_straggled('ref-fsdp2', _H7_SLOW, _H7)['step_time_s'] * 1e3:.1f} ms"
FIGURES["faults.host.ddp.slowdown"] = lambda: (
    "changes nothing" if _straggler("ref-ddp2", _RG_SLOW, _RG)["slowdown"] == 1
    else f"slows it x{_straggler('ref-ddp2', _RG_SLOW, _RG)['slowdown']:.3f}")
FIGURES["faults.host.ddp.step"] = lambda: f"{_straggled('ref-ddp2', _RG_SLOW, _RG)['step_time_s'] * 1e3:.1f} ms"


# -- docs/scale.md -----------------------------------------------------------------------------

#: The 100k scenario cut to 256 GPUs (32 nodes, 16 layers): the reduced run against the full one.
_SCALE_256 = ("cluster.nodes=32", "parallelism.dp=2", "training.global_batch=32", "model.layers=16")


@cache
def _scale_256() -> tuple[float, float, int, int, float]:
    """(reduced step, full step, reduced ops, full ops, largest breakdown difference) of the cut case."""
    from clustersim.simulate.resolve import resolve_scenario
    from clustersim.simulate.run import run_scenario
    rs = resolve_scenario(ROOT / "scenarios" / "llama3-405b-100k.yaml", list(_SCALE_256))
    red = run_scenario(rs, fidelity="flow", reduced=True)
    full = run_scenario(rs, fidelity="flow", reduced=False)
    gap = max(abs(red.breakdown[k] - full.breakdown[k]) for k in full.breakdown)
    return red.step_time_s, full.step_time_s, red.ops, full.ops, gap


def _same(red: float, full: float, gap: float | None = None) -> str:
    if red != full:
        return _pct(red / full - 1, 2)
    if gap is None:
        return "0 (bit-identical)"
    return "0 (bit-identical; every breakdown part " + ("too)" if gap == 0 else f"within {gap:.0e} s)")


@figure("scale.symmetry-table")
def _scale_symmetry_table() -> str:
    red, full, ro, fo, gap = _scale_256()
    cmd = ("`clustersim run scenarios/llama3-405b-100k.yaml " + " ".join(f"--set {o}" for o in _SCALE_256)
           + " --fidelity flow --json` and the same with `--full`")
    cred, cfull, cro, cfo = _symmetry((("topology", "colossus-h100"),))
    return "\n".join([
        "| case | reduced step (s) | full step (s) | difference | ops reduced / full | command |",
        "|---|---|---|---|---|---|",
        f"| Llama 3 405B shapes, 16 layers, TP8 PP16 DP2, GBS 32 (the 100k scenario's layout, 32 nodes) | "
        f"{red:.6f} | {full:.6f} | {_same(red, full, gap)} | {ro:,} / {fo:,} | {cmd} |",
        f"| 16 layers, h 4096, TP8 PP4 DP8, ZeRO-1, GBS 64 | {cred:.5f} | {cfull:.5f} | {_same(cred, cfull)} | "
        f"{cro:,} / {cfo:,} | `pytest tests/integration/test_run_symmetry.py -k colossus` (asserts within 2%) |",
    ]) + "\n"


def _scale_point(nodes: int) -> dict:
    """One weak-scaling point of benchmarks/scale_growth.py (DP = nodes / 16), analytical."""
    dp = nodes // 16
    return _run("llama3-405b-100k", (f"cluster.nodes={nodes}", f"parallelism.dp={dp}",
                                     f"training.global_batch={16 * dp}"), "analytical")


FIGURES["scale.100k.analytical.step"] = lambda: f"{_scale_point(12800)['step_time_s']:.3f} s"
FIGURES["scale.100k.analytical.mfu"] = lambda: _pct(_scale_point(12800)["mfu"], sign=False)
FIGURES["scale.100k.analytical.ops"] = lambda: f"{_scale_point(12800)['ops']:,}"
FIGURES["scale.128.analytical.step"] = lambda: f"{_scale_point(16)['step_time_s']:.3f} s"
FIGURES["scale.growth.analytical"] = lambda: _pct(
    _scale_point(12800)["step_time_s"] / _scale_point(16)["step_time_s"] - 1)


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------

# -- docs/training.md and docs/planning.md: issue 33's configurations ---------------------------

def _s(name: str, *overrides: str, fidelity: str | None = None) -> str:
    return f"{_run(name, tuple(overrides), fidelity)['step_time_s']:.2f} s"


def _gib(name: str, *overrides: str) -> str:
    return f"{_run(name, tuple(overrides))['memory']['peak_bytes_per_gpu'] / 2**30:.1f} GiB"


_PACKED = "cluster.gpus_per_node=null"
FIGURES["training.rack-ep.rack"] = lambda: _s("deepseek-v3-gb300-rack-ep")
FIGURES["training.rack-ep.packed"] = lambda: _s("deepseek-v3-gb300-rack-ep", _PACKED)
FIGURES["training.rack-ep.packed-flow"] = lambda: _s("deepseek-v3-gb300-rack-ep", _PACKED, fidelity="flow")
FIGURES["training.ulysses"] = lambda: _s("llama2-7b-ulysses-cp")
FIGURES["training.ulysses.ring"] = lambda: _s("llama2-7b-nemo-cp")
_NONE, _FULL = ("training.recompute=none", "training.recompute_layers=null"), ("training.recompute_layers=null",)
FIGURES["training.block-recompute"] = lambda: f"{_s('gpt3-175b-block-recompute')} and {_gib('gpt3-175b-block-recompute')}"
FIGURES["training.block-recompute.none"] = lambda: f"{_s('gpt3-175b-block-recompute', *_NONE)} / {_gib('gpt3-175b-block-recompute', *_NONE)}"
FIGURES["training.block-recompute.full"] = lambda: f"{_s('gpt3-175b-block-recompute', *_FULL)} / {_gib('gpt3-175b-block-recompute', *_FULL)}"
FIGURES["training.hsdp"] = lambda: f"{_s('llama3-8b-hsdp-h100-96gb')}, {_gib('llama3-8b-hsdp-h100-96gb')}"
FIGURES["training.hsdp.fsdp"] = lambda: (f"{_s('llama3-8b-hsdp-h100-96gb', 'parallelism.fsdp_shard_size=null')}, "
                                         f"{_gib('llama3-8b-hsdp-h100-96gb', 'parallelism.fsdp_shard_size=null')}")
_DS_WINNER = ("parallelism.tp=2", "parallelism.pp=8", "parallelism.dp=128", "parallelism.ep=16",
              "parallelism.sequence_parallel=true", "parallelism.zero=2", "parallelism.schedule=dualpipe_v",
              "parallelism.virtual_stages=2", "parallelism.ep_max_nodes=2")
FIGURES["planning.dsv3.published"] = lambda: _s("deepseek-v3-2048-h100")
FIGURES["planning.dsv3.published.gib"] = lambda: _gib("deepseek-v3-2048-h100")
FIGURES["planning.dsv3.winner"] = lambda: f"{_s('deepseek-v3-2048-h100', *_DS_WINNER)} ({_gib('deepseek-v3-2048-h100', *_DS_WINNER)})"
FIGURES["planning.mixtral.ep8"] = lambda: _s("mixtral-8x7b-ep8")



def main(argv: list[str] | None = None) -> int:
    """Entry point: ``--check`` (exit 1 on any stale or unknown marker), ``--write`` or ``--list``."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--check", action="store_true", help="list every stale or unknown marker; exit 1 if any")
    g.add_argument("--write", action="store_true", help="refresh every marker in place")
    g.add_argument("--list", action="store_true", help="print the registered keys")
    ap.add_argument("--times", action="store_true", help="with --check: the CPU seconds of the slowest figures")
    ap.add_argument("--workers", type=int, default=2, help="processes computing the figures (default 2)")
    ap.add_argument("paths", nargs="*", type=Path, help="documents (default: README.md and docs/*.md)")
    a = ap.parse_args(argv)
    if a.list:
        print("\n".join(sorted(FIGURES)))
        return 0
    paths = a.paths or None
    if a.check:
        values = Values(FIGURES)
        problems = check(paths, values=values, workers=a.workers)
        for p in problems:
            print(p)
        if a.times:
            for k, t in sorted(values.seconds.items(), key=lambda kv: -kv[1])[:40]:
                print(f"{t:7.2f} s  {k}")
        n = sum(len(parse(Path(p).read_text())) for p in (paths or default_paths()))
        print(f"{n} markers, {len(problems)} problems" + ("" if not problems else
              " (python tools/doc_figures.py --write refreshes the stale ones)"))
        return 1 if problems else 0
    changed, problems = write(paths, workers=a.workers)
    for p in problems:
        print(p)
    print(f"rewrote {len(changed)} files" + (": " + ", ".join(changed) if changed else ""))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
