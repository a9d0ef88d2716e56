"""pyproject lists every code package (automatic discovery is off because of the mapped data packages)."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_package_is_listed():
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = {p for p in cfg["packages"] if not p.startswith("clustersim._shipped")}
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "clustersim").rglob("__init__.py")
             if "__pycache__" not in p.parts}
    assert found == listed, f"missing from pyproject: {found - listed}; listed but absent: {listed - found}"
    for pkg, folder in cfg["package-dir"].items():
        if pkg:
            assert (ROOT / folder).is_dir(), folder
