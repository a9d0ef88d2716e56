import pytest

from clustersim.errors import ClusterSimError
from clustersim.units import (
    format_bandwidth, format_bytes, format_time, parse_bandwidth, parse_size, parse_size_range, parse_time,
)


@pytest.mark.parametrize("text,expected", [
    ("4096", 4096), (4096, 4096), ("8B", 8), ("1KiB", 1024), ("256MiB", 256 * 2**20),
    ("1GiB", 2**30), ("4GiB", 4 * 2**30), ("1GB", 10**9), ("1.5KB", 1500), ("2k", 2000),
])
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("bad", ["", "abc", "1XB", "-5", "1e400GB", True])
def test_parse_size_rejects(bad):
    with pytest.raises(ClusterSimError):
        parse_size(bad)


def test_parse_time_and_bandwidth():
    assert parse_time("2us") == pytest.approx(2e-6)
    assert parse_time("1.5ms") == pytest.approx(1.5e-3)
    assert parse_time(3) == 3.0
    assert parse_bandwidth("450GB/s") == pytest.approx(4.5e11)
    assert parse_bandwidth("400Gbit/s") == pytest.approx(5e10)
    with pytest.raises(ClusterSimError):
        parse_bandwidth("3 furlongs")


def test_size_range():
    assert parse_size_range("1KiB:8KiB") == [1024, 2048, 4096, 8192]
    assert parse_size_range("1MiB:4GiB")[-1] == 4 * 2**30
    assert parse_size_range("1MiB:4GiB:x4") == [2**20 * 4**i for i in range(7)]
    assert parse_size_range("100:400:+100") == [100, 200, 300, 400]
    for bad in ["1KiB", "8KiB:1KiB", "1KiB:8KiB:x1", "0:8", "1:2:y3"]:
        with pytest.raises(ClusterSimError):
            parse_size_range(bad)


def test_format():
    assert format_bytes(2**20) == "1 MiB"
    assert format_bytes(10) == "10 B"
    assert format_time(1.5e-5) == "15 us"
    assert format_bandwidth(4.5e11) == "450 GB/s"
