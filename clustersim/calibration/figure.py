"""The PNG figure of the calibration reports (``calibrate report`` and its ``--transfer`` checks).

Owns the figure both reports draw into: its size (7 x 4.5 in at 110 dpi, 770 x 495 pixels),
the non-interactive Agg backend (no display on a cluster's login node), and laying it out,
writing it and closing it (pyplot keeps every open figure alive until it is closed).

Examples
--------
>>> import tempfile
>>> path = Path(tempfile.mkdtemp()) / "line.png"
>>> with png_figure(path) as ax:
...     _ = ax.plot([1, 2], [3, 4])
>>> path.read_bytes()[:4]
b'\\x89PNG'
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any, Iterator

from clustersim.files import write_output


@contextlib.contextmanager
def png_figure(path: str | Path) -> Iterator[Any]:
    """The axes of a new report figure; when the block ends the figure is laid out, written to
    ``path`` as PNG and closed (closed also when the block raises)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
    try:
        yield ax
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
        write_output(path, buf.getvalue(), "figure")
    finally:
        plt.close(fig)
