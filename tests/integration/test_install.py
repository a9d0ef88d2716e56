"""A normal, non-editable install finds shipped topologies, scenarios and profiles by bare name."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_non_editable_install_finds_shipped_data(tmp_path):
    src = tmp_path / "src"
    # Copy the tree without build artefacts so the wheel is built from clean sources.
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".git", ".venv", "*.egg-info", "build", "__pycache__", "out", ".whl"))
    target = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                        "--target", str(target), str(src)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    shutil.rmtree(src)  # the installed copy must not depend on the source tree
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code = (
        "import clustersim.config.base as b\n"
        "assert 'site' in b.__file__, b.__file__\n"
        "for kind in ('topology', 'scenario', 'profile'):\n"
        "    names = b.shipped_names(kind)\n"
        "    assert names, kind\n"
        "    p = b.resolve_file(names[0], kind)\n"
        "    assert p.is_file() and 'site' in str(p), p\n"
        "assert 'hgx-h200' in b.shipped_names('profile') and 'inputs' not in b.shipped_names('profile')\n"
        "assert not (b.shipped_dir('profile') / 'inputs.yaml').exists()  # the recipe's list of inputs is no data\n"
        "from clustersim.topology.catalog import list_presets\n"
        "assert [p.name for p in list_presets()] == b.shipped_names('topology')  # topo list\n"
        "print(b.shipped_names('topology'))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(target))
    r = subprocess.run([sys.executable, "-c", code], cwd=elsewhere, capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "hgx-h200" in r.stdout and "dgx-h100" in r.stdout
