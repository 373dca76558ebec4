#!/usr/bin/env python3
"""On the GPU machine: torch.compile's kernels for a model, kernel by kernel
(torch.profiler over 20 calls of the compiled model, default mode: the same
kernels reduce-overhead replays, without the CUDA graph), to set beside
`bench MODEL.onnx --profile-steps`. Batch 1, float32, TF32 off, as peers.py.

usage: python3 peer_profile.py NAME ...    (names as in export_models.py)
"""
import collections, sys, torch
from torch.profiler import profile, ProfilerActivity
from export_models import MODELS
torch.backends.cudnn.benchmark = True
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
CALLS = 20

for name in sys.argv[1:]:
    model, args = MODELS[name]()
    model = model.cuda().eval(); args = tuple(a.cuda() for a in args)
    with torch.no_grad():
        compiled = torch.compile(model)
        for _ in range(10): compiled(*args)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(CALLS): compiled(*args)
            torch.cuda.synchronize()
    kernels = [(e.name, e.device_time_total) for e in prof.events()
               if e.device_type == torch.autograd.DeviceType.CUDA]
    by_name = collections.defaultdict(lambda: [0, 0.0])
    for kernel, us in kernels:
        by_name[kernel][0] += 1; by_name[kernel][1] += us
    total = sum(us for _, us in kernels) / CALLS
    print(f"== {name}: torch.compile, {len(kernels) / CALLS:.0f} kernels per call, {total / 1000:.4f} ms of kernels per call")
    for kernel, (count, us) in sorted(by_name.items(), key=lambda kv: -kv[1][1])[:40]:
        print(f"  {count / CALLS:6.1f} x {us / CALLS / 1000:8.4f} ms  {kernel[:150]}")
    print("  -- one call, in order:")
    for kernel, us in kernels[:len(kernels) // CALLS]:
        print(f"    {us:8.1f} us  {kernel[:140]}")
