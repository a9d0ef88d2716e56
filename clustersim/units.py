"""Parse and format sizes, bandwidths and times.

Internal units are bytes, seconds, bytes/s and FLOP/s. As in nccl-tests,
GB = 1e9 bytes and GiB = 2**30 bytes; ``450GB/s`` is 4.5e11 bytes/s.

Examples
--------
>>> parse_size("4GiB")
4294967296
>>> parse_size("256MiB") == 256 * 2**20
True
>>> parse_bandwidth("450GB/s")
450000000000.0
>>> parse_time("2us")
2e-06
>>> format_bytes(1048576)
'1 MiB'
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

from clustersim.errors import ClusterSimError

GB = 1e9
GiB = 2**30
MiB = 2**20
KiB = 2**10

_SIZE_UNITS = {
    "": 1, "b": 1, "byte": 1, "bytes": 1,
    "k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6, "g": 1e9, "gb": 1e9, "t": 1e12, "tb": 1e12,
    "ki": KiB, "kib": KiB, "mi": MiB, "mib": MiB, "gi": GiB, "gib": GiB, "ti": 2**40, "tib": 2**40,
}
_TIME_UNITS = {"": 1.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9, "min": 60.0, "h": 3600.0}
_BW_UNITS = {
    "b/s": 1.0, "bps": 1.0, "kb/s": 1e3, "mb/s": 1e6, "gb/s": 1e9, "tb/s": 1e12,
    "kib/s": KiB, "mib/s": MiB, "gib/s": GiB,
    "gbit/s": 1e9 / 8, "gbps": 1e9 / 8, "mbit/s": 1e6 / 8, "tbit/s": 1e12 / 8,
}
#: Largest size any field or option may give: 1 PiB (1,000x the HBM of a GB200 NVL72 rack).
MAX_SIZE_BYTES = 2**50
#: Most sizes one START:END[:xF] range may list.
MAX_RANGE_SIZES = 10_000

_NUM = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-zµ/]*)\s*$")


def _split(text: str, what: str) -> tuple[float, str]:
    m = _NUM.match(str(text))
    if not m:
        raise ClusterSimError(f"cannot read {what} {text!r} (expected a number with an optional unit)")
    return float(m.group(1)), m.group(2).lower()


#: Longest text of one number with its unit: a size or time is at most a few dozen characters, and
#: Python refuses to convert integers of more than 4,300 digits (checked before any conversion).
MAX_NUMBER_CHARS = 64


def _short(text: object, what: str) -> None:
    if isinstance(text, str) and len(text) > MAX_NUMBER_CHARS:
        raise ClusterSimError(f"{what} of {len(text):,} characters (at most {MAX_NUMBER_CHARS}: "
                              f"{text[:12]}...)")


def _exact(number: str) -> Fraction:
    """The exact value of a decimal number text; exponents beyond +-40 are clamped (Fraction would
    build 10**exponent: ``1e99999999999`` must not take minutes), which keeps every comparison below."""
    mantissa, _, exponent = number.lower().partition("e")
    exp = int(exponent) if exponent else 0
    if abs(exp) > 40:
        if Fraction(mantissa) == 0:
            return Fraction(0)
        exp = 41 if exp > 0 else -41
    return Fraction(mantissa) * Fraction(10) ** exp


def parse_size(text: str | int | float) -> int:
    """Bytes from ``4096``, ``"64KiB"``, ``"1GB"`` (decimal) or ``"1GiB"`` (binary).

    The result must be a whole number of bytes (``"1.5B"`` and ``"0.3KiB"`` are refused, never
    rounded) and at most :data:`MAX_SIZE_BYTES`.

    >>> parse_size("1.5KiB"), parse_size("2.5e3B")
    (1536, 2500)
    >>> parse_size("1.5B")
    Traceback (most recent call last):
    ...
    clustersim.errors.ClusterSimError: size '1.5B' is 1.5 bytes, not a whole number of bytes
    >>> parse_size("64KiB"), parse_size("1GB"), parse_size("1.5 MiB"), parse_size(4096)
    (65536, 1000000000, 1572864, 4096)
    >>> parse_size("4 parsecs")
    Traceback (most recent call last):
    ...
    clustersim.errors.ClusterSimError: unknown size unit 'parsecs' in '4 parsecs' (use B, KB, MB, GB, KiB, MiB, GiB)
    """
    if isinstance(text, bool):
        raise ClusterSimError(f"cannot read size {text!r}")
    _short(text, "size")
    if isinstance(text, (int, float)):
        if isinstance(text, float) and not math.isfinite(text):
            raise ClusterSimError(f"size {text!r} must be a finite number >= 0")
        exact, unit = Fraction(text), ""
    else:
        m = _NUM.match(str(text))
        if not m:
            raise ClusterSimError(f"cannot read size {text!r} (expected a number with an optional unit)")
        exact, unit = _exact(m.group(1)), m.group(2).lower()
    if unit not in _SIZE_UNITS:
        raise ClusterSimError(f"unknown size unit {unit!r} in {text!r} (use B, KB, MB, GB, KiB, MiB, GiB)")
    if exact < 0:
        raise ClusterSimError(f"size {text!r} must be a finite number >= 0")
    if exact > MAX_SIZE_BYTES:  # checked before scaling: exponents like 1e999999 stay cheap
        raise ClusterSimError(f"size {text!r} exceeds the bound of 1 PiB (1,000x the HBM of a GB200 NVL72 rack)")
    out = exact * Fraction(_SIZE_UNITS[unit])
    if out > MAX_SIZE_BYTES:
        raise ClusterSimError(f"size {text!r} exceeds the bound of 1 PiB (1,000x the HBM of a GB200 NVL72 rack)")
    if out.denominator != 1:
        raise ClusterSimError(f"size {text!r} is {float(out):g} bytes, not a whole number of bytes")
    return int(out)


def _finite(value: float, text: object, what: str) -> float:
    if not math.isfinite(value) or value < 0:
        raise ClusterSimError(f"{what} {text!r} must be a finite number >= 0")
    return value


def _scaled(text: str | int | float, what: str, units: dict[str, float], use: str) -> float:
    """A plain number as it is, or a number times its unit's factor in ``units``; finite and >= 0.
    ``use`` lists the units an error message suggests."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return _finite(float(text), text, what)
    _short(text, what)
    value, unit = _split(text, what)
    if unit not in units:
        raise ClusterSimError(f"unknown {what} unit {unit!r} in {text!r} (use {use})")
    return _finite(value * units[unit], text, what)


def parse_time(text: str | int | float) -> float:
    """Seconds from ``"2us"``, ``"1.5ms"``, ``3`` (seconds).

    >>> parse_time("1.5ms"), parse_time("2us"), parse_time(3)
    (0.0015, 2e-06, 3.0)
    """
    return _scaled(text, "time", _TIME_UNITS, "s, ms, us, ns")


def parse_bandwidth(text: str | int | float) -> float:
    """Bytes/s from ``"450GB/s"``, ``"400Gbit/s"``, or a plain number of bytes/s.

    A 400 Gb/s NIC moves 50 GB/s; GiB/s is binary:

    >>> parse_bandwidth("400Gbit/s"), parse_bandwidth("1GiB/s"), parse_bandwidth(1e9)
    (50000000000.0, 1073741824.0, 1000000000.0)
    """
    return _scaled(text, "bandwidth", _BW_UNITS, "GB/s, GiB/s, Gbit/s")


def parse_size_range(text: str) -> list[int]:
    """Sizes from ``"START:END[:xF]"`` (geometric, factor F, default 2) or ``"START:END:+STEP"``.

    >>> parse_size_range("1KiB:8KiB")
    [1024, 2048, 4096, 8192]
    """
    _short(text, "size range")
    parts = str(text).split(":")
    if len(parts) not in (2, 3):
        raise ClusterSimError(f"cannot read size range {text!r} (expected START:END[:xF])")
    start, end = parse_size(parts[0]), parse_size(parts[1])
    if start <= 0 or end < start:
        raise ClusterSimError(f"size range {text!r} needs 0 < START <= END")
    step = parts[2] if len(parts) == 3 else "x2"
    out: list[int] = []

    def too_many(n: float) -> ClusterSimError:
        return ClusterSimError(f"size range {text!r} has {n:,.0f} sizes (at most {MAX_RANGE_SIZES:,})")

    if step.startswith("x") or step.startswith("*"):
        try:
            factor = float(step[1:])
        except ValueError:
            raise ClusterSimError(f"cannot read factor {step!r} in size range {text!r}") from None
        if not math.isfinite(factor) or factor <= 1:
            raise ClusterSimError(f"factor in size range {text!r} must be a finite number > 1")
        count = math.log(end / start) / math.log(factor) + 1  # before the loop: a factor of 1.0000001 is 10^8 sizes
        if count > MAX_RANGE_SIZES + 1:
            raise too_many(count)
        s = float(start)
        while s <= end * (1 + 1e-12):
            out.append(int(round(s)))
            s *= factor
    elif step.startswith("+"):
        inc = parse_size(step[1:])
        if inc <= 0:
            raise ClusterSimError(f"step in size range {text!r} must be > 0")
        count = (end - start) // inc + 1
        if count > MAX_RANGE_SIZES:
            raise too_many(count)
        out = list(range(start, end + 1, inc))
    else:
        raise ClusterSimError(f"cannot read step {step!r} in size range {text!r} (use xF or +STEP)")
    if len(out) > MAX_RANGE_SIZES:
        raise too_many(len(out))
    return out


def format_bytes(n: float) -> str:
    """``1048576`` -> ``'1 MiB'`` (binary units, trailing zeros dropped).

    >>> format_bytes(1048576), format_bytes(3 * 2**30 // 2), format_bytes(512)
    ('1 MiB', '1.5 GiB', '512 B')
    """
    n = float(n)
    for unit, scale in (("TiB", 2**40), ("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if abs(n) >= scale:
            return f"{n / scale:.4g} {unit}"
    return f"{n:.0f} B"


def format_time(t: float) -> str:
    """``1.5e-5`` -> ``'15 us'``.

    >>> format_time(1.5e-5), format_time(0.25), format_time(3e-9)
    ('15 us', '250 ms', '3 ns')
    """
    t = float(t)
    if t == 0:
        return "0 s"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(t) >= scale:
            return f"{t / scale:.4g} {unit}"
    return f"{t / 1e-9:.4g} ns"


def format_bandwidth(bps: float) -> str:
    """``4.5e11`` -> ``'450 GB/s'`` (decimal GB, as nccl-tests).

    >>> format_bandwidth(4.5e11), format_bandwidth(parse_bandwidth("400Gbit/s"))
    ('450 GB/s', '50 GB/s')
    """
    return f"{bps / GB:.4g} GB/s"
