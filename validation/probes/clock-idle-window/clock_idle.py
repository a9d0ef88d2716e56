"""How a GPU's sustained clock follows idle time: the time constant of the power limiter (one GPU).

The profile's clock table gives the slowdown of compute-bound kernels by their share of a *busy* GPU's time
(GEMMs alternating with copies). A pipeline rank idles between chunks; whether its kernels then run at the
clock of its average duty depends on how fast the limiter follows the power. Three phases, bf16 GEMMs of
8192^3 (about 1.45 ms at the boost clock), each GEMM timed with CUDA events:

* ``settle``: 2,500 GEMMs back to back after 2 s idle: the time of every GEMM (the clock falling from boost).
* ``resume``: after 1.5 s of GEMMs, the GPU idles ``gap`` ms, then 100 GEMMs: how much of the boost an idle
  gap of that length gives back, and for how long.
* ``cycle``: GEMMs for ``period x duty``, idle for the rest, repeated for 3 s: the mean GEMM time of the last
  2 s, by duty and period: does the average duty set the clock at every period?

Prints one JSON line per measurement.

    python validation/probes/clock-idle-window/clock_idle.py > clock_idle.jsonl
"""

import json
import time

import torch


def gemm_times(a, b, n, gap_s=0.0):
    """ms of each of ``n`` GEMMs issued back to back (after ``gap_s`` of idle GPU)."""
    torch.cuda.synchronize()
    if gap_s:
        time.sleep(gap_s)
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(n + 1)]
    ev[0].record()
    for i in range(n):
        torch.mm(a, b)
        ev[i + 1].record()
    torch.cuda.synchronize()
    return [ev[i].elapsed_time(ev[i + 1]) for i in range(n)]


def busy_for(a, b, seconds, per_ms):
    """GEMMs for about ``seconds``, waited for; returns their times."""
    return gemm_times(a, b, max(1, int(round(seconds * 1e3 / per_ms))))


def main():
    torch.cuda.set_device(0)
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    gemm_times(a, b, 20)
    time.sleep(2.0)
    t = gemm_times(a, b, 2500)
    print(json.dumps({"phase": "settle", "ms": [round(x, 4) for x in t]}), flush=True)
    per = sum(t[-500:]) / 500
    for gap in (0.002, 0.005, 0.010, 0.020, 0.050, 0.100, 0.200, 0.500, 1.0):
        busy_for(a, b, 1.5, per)
        t = gemm_times(a, b, 100, gap_s=gap)
        print(json.dumps({"phase": "resume", "gap_ms": gap * 1e3, "ms": [round(x, 4) for x in t]}), flush=True)
    for duty in (0.5, 0.75):
        for period in (0.004, 0.010, 0.030, 0.100, 0.300):
            busy_for(a, b, 1.0, per)
            n_busy = max(1, int(round(period * duty * 1e3 / per)))
            idle = period * (1 - duty)
            times, t0 = [], time.perf_counter()
            while time.perf_counter() - t0 < 3.0:
                x = gemm_times(a, b, n_busy, gap_s=idle)
                if time.perf_counter() - t0 > 1.0:
                    times += x
            print(json.dumps({"phase": "cycle", "duty": duty, "period_ms": period * 1e3, "gemms_per_burst": n_busy,
                              "mean_ms": round(sum(times) / len(times), 4), "n": len(times)}), flush=True)
    t = gemm_times(a, b, 1000)
    print(json.dumps({"phase": "sustained", "mean_ms": round(sum(t[-500:]) / 500, 4)}), flush=True)


if __name__ == "__main__":
    main()
