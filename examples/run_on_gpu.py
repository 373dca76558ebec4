"""Loads an ONNX model (one `optimize` wrote, say) onto tgr's GPU runtime, runs it
on inputs of ones and prints each output's shape and first values; where PyTorch
sees the GPU, runs it again on torch tensors, through DLPack (no copy out).
usage: python3 run_on_gpu.py MODEL.onnx"""
import sys

import numpy as np

import tgr

try:
    session = tgr.Session(sys.argv[1])
    ones = {i.name: np.ones(i.shape, np.float32 if i.dtype == "float32" else np.int64) for i in session.inputs}
    for name, value in session.run(ones).items():
        print(name, value.shape, value.ravel()[:5])
except tgr.Error as e:
    sys.exit(f"run_on_gpu.py: error: {e}")
try:
    import torch
except ImportError:
    sys.exit(0)
if torch.cuda.is_available():
    on_gpu = {name: torch.from_numpy(value).cuda() for name, value in ones.items()}
    for name, value in session.run_dlpack(on_gpu).items():
        t = torch.from_dlpack(value)
        print(name, "on", t.device, tuple(t.shape), t.flatten()[:5].tolist())
