#!/usr/bin/env python3
"""tgr.Session (python/tgr/session.py) against `bench` on one model, on the GPU
machine (session_bench.sh runs it). `bench`'s number is the median CUDA-graph
replay, by CUDA events, with no copies; a Session run is timed by the host's
clock around the call, as a user sees it:

  run        NumPy in and out: the inputs copied to the GPU, the replay, the outputs
             copied back; compared with bench's replay plus those copies alone (the
             same bytes, copied by PyTorch from and to pageable memory)
  run_dlpack torch CUDA tensors in, DLPack out (device-to-device copies of the
             inputs and outputs only); compared with bench's replay, and taken
             apart: the C++ run alone, torch's stream handshakes, an idle
             synchronize, one replay timed by the host, and run_dlpack with
             one handshake per input

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

    stream = session._session.stream

    def every_input_handshaken():  # run_dlpack as before one handshake per producer: a handshake per input
        session.run_dlpack({k: v.__dlpack__(stream=stream) for k, v in device_inputs.items()})

    def handshakes():  # the producer's side alone: torch's event record and wait per input
        for v in device_inputs.values():
            v.__dlpack__(stream=stream)

    def core_ms(iters):  # the C++ run alone: capsules made (without handshake) outside the clock
        times = []
        for _ in range(iters):
            capsules = [device_inputs[spec.name].__dlpack__(stream=-1) for spec in session.inputs]
            start = time.perf_counter()
            session._session.run(capsules, True)
            times.append((time.perf_counter() - start) * 1e3)
        return statistics.median(times)

    per_round = max(10, a.iters // a.rounds)
    measures = {"run": lambda: session.run(host), "dlpack": lambda: session.run_dlpack(device_inputs),
                "copies": copies, "dlpack_each": every_input_handshaken, "handshakes": handshakes,
                "sync": torch.cuda.synchronize, "one_replay": lambda: session.replay_ms(1, 0)}
    for fn in measures.values():
        for _ in range(10):
            fn()
    rounds = {k: [] for k in ["replay", "core", *measures]}
    for _ in range(a.rounds):  # alternating, one round of each in turn
        rounds["replay"].append(session.replay_ms(per_round, 2))
        rounds["core"].append(core_ms(per_round))
        for k, fn in measures.items():
            rounds[k].append(median_wall_ms(fn, per_round))
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
    print(f"  where run_dlpack's time goes: the C++ run alone {m['core']:.4f} ms; torch's stream handshakes "
          f"({len(device_inputs)} inputs) {m['handshakes']:.4f} ms; an idle synchronize {m['sync']:.4f} ms; "
          f"one replay timed by the host (launch and wait, no copies) {m['one_replay']:.4f} ms; "
          f"with a handshake per input {m['dlpack_each']:.4f} ms ({m['dlpack_each'] / a.bench_ms:.3f} of bench)")
    print(f"SESSION {name} {a.bench_ms:.4f} {m['replay']:.4f} {m['run']:.4f} {m['copies']:.4f} {run_ratio:.3f} "
          f"{m['dlpack']:.4f} {dlpack_ratio:.3f} {check}", flush=True)


if __name__ == "__main__":
    main()
