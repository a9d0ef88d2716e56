"""No module of the package is over :data:`MAX_LINES` lines.

A module that long holds more than one concept (``config/profile.py`` held the link model, the
host costs and the compute tables at 646 lines; ``simulate/run.py`` step building, execution,
link accounting and the result): split it by concept, as those were, rather than raise the bar.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "clustersim"
MAX_LINES = 600


def long_modules(pkg: Path = PKG, limit: int = MAX_LINES) -> list[str]:
    """``path: lines`` of every ``.py`` file under ``pkg`` with more than ``limit`` lines, longest first."""
    sizes = [(len(p.read_text().splitlines()), p.relative_to(pkg.parent).as_posix()) for p in pkg.rglob("*.py")]
    return [f"{name}: {n} lines" for n, name in sorted(sizes, key=lambda x: (-x[0], x[1])) if n > limit]


def test_no_module_over_the_limit():
    long = long_modules()
    assert not long, f"modules over {MAX_LINES} lines (split them by concept):\n" + "\n".join(long)


def test_the_size_check_counts_lines(tmp_path):
    root = tmp_path / "clustersim"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "long.py").write_text("x = 1\n" * 601)
    (root / "sub" / "at_limit.py").write_text("x = 1\n" * 600)
    assert long_modules(root) == ["clustersim/sub/long.py: 601 lines"]
