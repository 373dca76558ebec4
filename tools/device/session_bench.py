#!/usr/bin/env python3
"""tgr.Session (python/tgr/session.py) against `bench` on one model, on the GPU
machine (session_bench.sh runs it). `bench`'s number is the median CUDA-graph
replay, by CUDA events, with no copies; a Session run is timed by the host's
clock around the call, as a user sees it:

  run        NumPy in and out: the inputs copied to the GPU, the replay, the outputs
             copied back; compared with bench's replay plus those copies alone (the
             same bytes, copied by PyTorch from and to pageable memory)
  run_dlpack torch CUDA tensors in, DLPack out (device-to-device copies of the
             inputs and outputs only); compared with bench's replay

Each is timed in alternating rounds with the session's own replay_ms (the
median of each round, then over rounds). Prints one line per measure and
    SESSION name bench_ms replay_ms run_ms copies_ms run_ratio dlpack_ms dlpack_ratio check
with run_ratio = run / (bench + copies), dlpack_ratio = run_dlpack / bench.

usage: session_bench.py MODEL.onnx TEST_DATA_DIR BENCH_MS [--name N] [--iters N] [--costs-db DB]
"""
import argparse
import os
import statistics
import time

import numpy as np
import onnx
import torch

import tgr


def median_wall_ms(fn, iters):
    times = []
    for _ in range(iters):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model")
    p.add_argument("test_data")
    p.add_argument("bench_ms", type=float)
    p.add_argument("--name")
    p.add_argument("--iters", type=int, default=200)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--costs-db")
    a = p.parse_args()
    name = a.name or os.path.splitext(os.path.basename(a.model))[0]
    load = lambda prefix: [onnx.numpy_helper.to_array(onnx.load_tensor(os.path.join(a.test_data, f)))
                           for f in sorted(os.listdir(a.test_data)) if f.startswith(prefix)]
    start = time.perf_counter()
    session = tgr.Session(a.model, costs_db=a.costs_db)
    print(f"{name}: loaded on {session.device_name} in {time.perf_counter() - start:.2f} s "
          f"({session.stored_kernel_choices} stored kernel choices)", flush=True)
    host = {spec.name: x for spec, x in zip(session.inputs, load("input_"))}
    expected = load("output_")
    outputs = session.run(host)
    errors = [np.linalg.norm(o.astype(np.float64) - e) / max(np.linalg.norm(e), 1e-30)
              for o, e in zip(outputs.values(), expected)]
    dlpack_out = {k: torch.from_dlpack(v).cpu().numpy() for k, v in
                  session.run_dlpack({k: torch.from_numpy(v).cuda() for k, v in host.items()}).items()}
    same = all(np.array_equal(dlpack_out[k], outputs[k]) for k in outputs)
    check = "ok" if max(errors) <= 1e-4 and same else "FAIL"
    print(f"  check: relative L2 error vs the test data's reference {max(errors):.2e}; "
          f"run_dlpack {'equal to' if same else 'DIFFERS from'} run: {check}", flush=True)

    device_inputs = {k: torch.from_numpy(v).cuda() for k, v in host.items()}
    device_outputs = [torch.empty(o.shape, dtype=torch.from_numpy(o).dtype, device="cuda") for o in outputs.values()]

    def copies():  # the bytes run() moves, alone
        for v in host.values():
            torch.from_numpy(v).cuda()
        for o in device_outputs:
            o.cpu()
        torch.cuda.synchronize()

    per_round = max(10, a.iters // a.rounds)
    for fn in (lambda: session.run(host), lambda: session.run_dlpack(device_inputs), copies):
        for _ in range(10):
            fn()
    rounds = {"replay": [], "run": [], "dlpack": [], "copies": []}
    for _ in range(a.rounds):
        rounds["replay"].append(session.replay_ms(per_round, 2))
        rounds["run"].append(median_wall_ms(lambda: session.run(host), per_round))
        rounds["dlpack"].append(median_wall_ms(lambda: session.run_dlpack(device_inputs), per_round))
        rounds["copies"].append(median_wall_ms(copies, per_round))
    m = {k: statistics.median(v) for k, v in rounds.items()}
    in_bytes = sum(v.nbytes for v in host.values())
    out_bytes = sum(o.nbytes for o in outputs.values())
    run_ratio = m["run"] / (a.bench_ms + m["copies"])
    dlpack_ratio = m["dlpack"] / a.bench_ms
    print(f"  bench replay {a.bench_ms:.4f} ms; the session's replay {m['replay']:.4f} ms "
          f"(median of {a.rounds} rounds of {per_round})")
    print(f"  run (NumPy): {m['run']:.4f} ms; copies alone ({in_bytes / 1e6:.2f} MB in, {out_bytes / 1e6:.3f} MB out)"
          f" {m['copies']:.4f} ms; run / (bench + copies) = {run_ratio:.3f}")
    print(f"  run_dlpack (torch CUDA tensors): {m['dlpack']:.4f} ms; run_dlpack / bench = {dlpack_ratio:.3f}")
    print(f"SESSION {name} {a.bench_ms:.4f} {m['replay']:.4f} {m['run']:.4f} {m['copies']:.4f} {run_ratio:.3f} "
          f"{m['dlpack']:.4f} {dlpack_ratio:.3f} {check}", flush=True)


if __name__ == "__main__":
    main()
