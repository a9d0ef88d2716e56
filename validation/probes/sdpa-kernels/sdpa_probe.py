"""Which SDPA backend and kernels run for the reference program's attention, versus the bench's setup.

    python3 validation/probes/sdpa-kernels/sdpa_probe.py        # on a GPU; prints kernel names and times per variant
"""
import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

b, s, nh, hd = 4, 2048, 16, 128
h = nh * hd
dev, dt = "cuda", torch.bfloat16


def variants():
    x = torch.randn(b, s, h, device=dev, dtype=dt, requires_grad=True)
    w = torch.randn(3 * h, h, device=dev, dtype=dt, requires_grad=True) * 0.02
    w = w.detach().requires_grad_(True)
    dout = torch.randn(b, s, h, device=dev, dtype=dt)

    def training():  # as reference/train_gpt.py: fused QKV linear, split, view, transpose; output reshaped
        qkv = F.linear(x, w)
        q, k, v = qkv.split([h, h, h], dim=-1)
        q, k, v = (t.view(b, s, nh, hd).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y.transpose(1, 2).reshape(b, s, h).backward(dout)

    leaf = torch.randn(b, s, 3, nh, hd, device=dev, dtype=dt, requires_grad=True)
    dy = torch.randn(b, s, nh, hd, device=dev, dtype=dt).transpose(1, 2)

    def bench():  # as clustersim.calibration.bench (kernel class attention_fwd_bwd)
        leaf.grad = None
        q, k, v = (leaf[:, :, i].transpose(1, 2) for i in range(3))
        F.scaled_dot_product_attention(q, k, v, is_causal=True).backward(dy)

    qc, kc, vc = (torch.randn(b, nh, s, hd, device=dev, dtype=dt, requires_grad=True) for _ in range(3))
    dyc = torch.randn(b, nh, s, hd, device=dev, dtype=dt)

    def contiguous():
        for t in (qc, kc, vc):
            t.grad = None
        F.scaled_dot_product_attention(qc, kc, vc, is_causal=True).backward(dyc)

    return {"training": training, "bench": bench, "contiguous": contiguous}


for name, fn in variants().items():
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(5):
            fn()
        torch.cuda.synchronize()
    print(f"== {name}")
    for e in sorted(prof.key_averages(), key=lambda e: -(getattr(e, "self_device_time_total", 0) or 0))[:8]:
        t = getattr(e, "self_device_time_total", 0) or 0
        if t > 0:
            print(f"   {e.key[:100]:100s} {e.count // 5:3d} x {t / e.count:8.1f} us")
