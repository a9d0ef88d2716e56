"""Hardware counters of this process's threads: instructions retired and CPU cycles (Linux perf_event_open).

Whether a host that takes longer for the same step ran *more instructions* (another code path: allocator, garbage
collector, Python's caches) or *the same instructions more slowly* (fewer per cycle: a physical core or cache shared
with another tenant) is what these two counts tell apart (docs/validation.md 6n). Counted in user and kernel mode,
per thread, summed over every thread of the process that existed when :class:`ThreadCounters` was opened (the main
thread, autograd's device threads, NCCL's watchdog). Many VMs expose no performance-monitoring unit to the guest:
then :attr:`ThreadCounters.available` is False and every read is ``(0.0, 0.0)``; nothing fails.

>>> c = ThreadCounters()
>>> ins, cyc = c.read()
>>> (ins > 0 and cyc > 0) if c.available else (ins, cyc) == (0.0, 0.0)
True
>>> c.close()
"""

from __future__ import annotations

import ctypes
import os
import platform
import struct

#: perf_event_open's system call number by machine (unistd.h)
_SYSCALL = {"x86_64": 298, "aarch64": 241}
#: PERF_TYPE_HARDWARE and its PERF_COUNT_HW_CPU_CYCLES / PERF_COUNT_HW_INSTRUCTIONS
_HARDWARE, _CYCLES, _INSTRUCTIONS = 0, 0, 1
#: PERF_ATTR_SIZE_VER0: type, size, config, sample_period, sample_type, read_format, flags, wakeup_events, bp_type,
#: config1 (the kernel accepts the first published layout)
_ATTR = struct.Struct("<IIQQQQQIIQ")


def _open(config: int, tid: int) -> int:
    """A counting (not sampling) hardware counter of thread ``tid``, enabled; -1 where the kernel refuses."""
    nr = _SYSCALL.get(platform.machine())
    if nr is None:
        return -1
    attr = ctypes.create_string_buffer(_ATTR.pack(_HARDWARE, _ATTR.size, config, 0, 0, 0, 0, 0, 0, 0), _ATTR.size)
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.syscall(nr, attr, tid, -1, -1, 0)  # this thread on any CPU, no group, no flags
    return int(fd)


class ThreadCounters:
    """Instructions and cycles of every thread of this process (those alive now), read as running totals."""

    def __init__(self) -> None:
        self._fds: list[tuple[int, int]] = []
        try:
            tids = [int(t) for t in os.listdir("/proc/self/task")]
        except OSError:
            tids = []
        for tid in tids:
            ins, cyc = _open(_INSTRUCTIONS, tid), _open(_CYCLES, tid)
            if ins < 0 or cyc < 0:
                for fd in (ins, cyc):
                    if fd >= 0:
                        os.close(fd)
                continue
            self._fds.append((ins, cyc))
        self.available = bool(self._fds)

    def read(self) -> tuple[float, float]:
        """(instructions, cycles) summed over the threads since they were opened."""
        ins = cyc = 0.0
        for a, b in self._fds:
            try:
                ins += struct.unpack("<Q", os.read(a, 8))[0]
                cyc += struct.unpack("<Q", os.read(b, 8))[0]
            except OSError:  # a thread that ended keeps its last count readable; anything else counts nothing
                pass
        return ins, cyc

    def close(self) -> None:
        for pair in self._fds:
            for fd in pair:
                os.close(fd)
        self._fds = []
        self.available = False
