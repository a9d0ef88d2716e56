"""Assertions over computed numbers that say which row and by how much when they fail.

Importable from every test file (pytest puts ``tests/`` on ``sys.path`` with its conftest)::

    from checks import assert_close, gap

    assert_close(pred, meas, rel=0.10, what="row ref-ddp2", unit="s", names=("predicted", "measured"))
    # AssertionError: row ref-ddp2: predicted 1.23 s vs measured 1.18 s (+4.24%, tolerance 10%)
    assert err <= 0.05, gap(pred, meas, what=f"{op} at {size} B", rel=0.05, unit="us")
"""

from __future__ import annotations

import math


def _num(x: float) -> str:
    return f"{x:.6g}"


def _relative(actual: float, expected: float) -> str:
    if expected == 0:
        return f"{actual - expected:+.3g} absolute"
    r = actual / expected - 1
    return f"{r:+.2%}" if abs(r) >= 1e-4 or r == 0 else f"{r:+.2e} relative"


def gap(actual: float, expected: float, *, what: str = "", rel: float | None = None, unit: str = "",
        names: tuple[str, str] = ("got", "expected")) -> str:
    """``"row X: got 1.23 s vs expected 1.18 s (+4.24%, tolerance 10%)"``: the text of a failed comparison.

    Parameters
    ----------
    actual, expected:
        The computed number and the one it is checked against.
    what:
        Which row, case or quantity (leads the text).
    rel:
        The relative tolerance, shown when given.
    unit:
        Appended to both numbers.
    names:
        What the two numbers are (``("predicted", "measured")`` for an accuracy row).

    Examples
    --------
    >>> gap(1.23, 1.18, what="row a", rel=0.10, unit="s", names=("predicted", "measured"))
    'row a: predicted 1.23 s vs measured 1.18 s (+4.24%, tolerance 10%)'
    """
    u = f" {unit}" if unit else ""
    tol = f", tolerance {rel:.3g}" if rel is not None and rel < 0.01 else (
        f", tolerance {rel:.0%}" if rel is not None else "")
    head = f"{what}: " if what else ""
    return (f"{head}{names[0]} {_num(actual)}{u} vs {names[1]} {_num(expected)}{u} "
            f"({_relative(actual, expected)}{tol})")


def assert_close(actual: float, expected: float, rel: float = 1e-6, abs: float = 1e-12, *, what: str = "",
                 unit: str = "", names: tuple[str, str] = ("got", "expected")) -> None:
    """Assert ``|actual - expected| <= max(rel * |expected|, abs)`` (``pytest.approx``'s rule and defaults),
    failing with :func:`gap`'s text.

    Examples
    --------
    >>> assert_close(1.05, 1.0, rel=0.10)
    >>> assert_close(1.2, 1.0, rel=0.10, what="row b")
    Traceback (most recent call last):
    ...
    AssertionError: row b: got 1.2 vs expected 1 (+20.00%, tolerance 10%)
    """
    ok = actual == expected or math.fabs(actual - expected) <= max(rel * math.fabs(expected), abs)
    if not ok:  # raised, not asserted: the text stays the same under pytest's assert rewriting and python -O
        raise AssertionError(gap(actual, expected, what=what, rel=rel, unit=unit, names=names))
