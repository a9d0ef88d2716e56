"""``clustersim topo draw`` writes a PNG of a 1,024-GPU superpod (moved from tests/unit/test_topology_cli.py)."""

from __future__ import annotations

import pytest

from clustersim.cli import main

pytestmark = pytest.mark.slow


def run(capsys, *args):
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    out = capsys.readouterr()
    # rich may wrap long messages at the console width: compare on normalised whitespace
    return code, out.out, " ".join(out.err.split())


def test_draw_writes_png(capsys, tmp_path):
    out = tmp_path / "x.png"
    code, _, err = run(capsys, "topo", "draw", "dgx-h100-superpod", "-o", str(out))
    assert code == 0, err
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    code, _, err = run(capsys, "topo", "draw", "dgx-h100", "-o", str(tmp_path / "x.txt"))
    assert code == 2 and ".png" in err
