"""tgr.Session: a model loaded once onto tgr's CUDA runtime and run many times.

    session = tgr.Session("model.opt.onnx")                  # plan, arena, kernel choices, CUDA graph: once
    outputs = session.run({"x": x})                           # NumPy in, NumPy out
    outputs = session.run_dlpack({"x": torch_cuda_tensor})    # GPU in, GPU out: torch.from_dlpack(outputs["y"])

The C++ side is tgr::Session (tgr/session.h, python/session_bindings.cpp).
Errors raise tgr.Error, naming the model or the input; without a GPU, or in a
tgr built without CUDA, creating a Session raises tgr.Error saying which.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Union

import numpy as np

from . import _tgr

_DLPACK_CUDA = (2, 13)  # DLPack device types: CUDA, CUDA managed memory
_HOST_DTYPES = {"float32": np.float32, "int64": np.int64, "bool": np.int64}  # bool is 8 bytes on the GPU
_DTYPE_KINDS = {"float32": "f", "int64": "iu", "bool": "biu"}  # NumPy kinds each input takes (cast to its type)
_HALF_TYPES = ("bfloat16", "float16")  # device types of float32 values at precision bf16 and fp16


class TensorSpec(NamedTuple):
    """A model input or output: its name, type ("float32", "int64", "bool") and
    fixed shape, and the type the GPU holds it in: its type, except a float32 at
    precision "bf16" or "fp16" ("bfloat16", "float16"). run() takes and returns
    dtype; run_dlpack takes and returns device_dtype (bool as int64)."""
    name: str
    dtype: str
    shape: tuple
    device_dtype: str = ""


def cuda_build() -> bool:
    """Whether this tgr was built with CUDA (has a GPU session at all)."""
    return _tgr.session_built_with_cuda()


def gpu_available() -> bool:
    """Whether a CUDA device is visible to this process (False in a build without CUDA)."""
    return _tgr.gpu_available()


class Session:
    """An ONNX model (one `optimize` wrote, say) loaded onto the GPU runtime.

    input_shapes fixes symbolic dimensions ({name: dims}, as --input-shape);
    costs_db is a rules database whose kernel choices `calibrate` measured on
    this GPU (else each is timed at load); cuda_graph=False launches the steps
    one by one instead of replaying one CUDA graph; precision "tf32" runs
    float32 products and convolutions on TF32 tensor cores ("fp32", the
    default, keeps TF32 off); "bf16" and "fp16" store every float value in
    that half type, the model's float32 inputs and outputs too: run() converts
    NumPy float32 in and out, run_dlpack takes and returns tensors of the half
    type (TensorSpec.device_dtype: torch.bfloat16, torch.float16).
    """

    def __init__(self, model: Union[str, "os.PathLike[str]"], *,
                 input_shapes: Optional[Mapping[str, Sequence[int]]] = None,
                 costs_db: Optional[Union[str, "os.PathLike[str]"]] = None, cuda_graph: bool = True,
                 precision: str = "fp32"):
        shapes = {str(k): [int(d) for d in v] for k, v in (input_shapes or {}).items()}
        self._session = _tgr.GpuSession(os.fspath(model), shapes, os.fspath(costs_db) if costs_db else "",
                                        bool(cuda_graph), str(precision))
        self.inputs: List[TensorSpec] = [TensorSpec(n, t, tuple(s), d) for n, t, s, d in self._session.inputs()]
        self.outputs: List[TensorSpec] = [TensorSpec(n, t, tuple(s), d) for n, t, s, d in self._session.outputs()]

    @property
    def device(self) -> int:
        """The CUDA device ordinal the model is on (the current device when it was loaded)."""
        return self._session.device

    @property
    def device_name(self) -> str:
        return self._session.device_name

    @property
    def stored_kernel_choices(self) -> int:
        """How many kernel choices were read from costs_db (0 without it)."""
        return self._session.stored_kernel_choices

    def run(self, inputs: Mapping[str, Any]) -> Dict[str, np.ndarray]:
        """One run: {input name: array} (NumPy or anything np.asarray takes, or a
        GPU tensor with __dlpack__) -> {output name: NumPy array}."""
        values = self._session.run(self._prepare(inputs), False)
        return {spec.name: self._host_output(spec, v) for spec, v in zip(self.outputs, values)}

    def run_dlpack(self, inputs: Mapping[str, Any]) -> Dict[str, Any]:
        """One run whose outputs stay on the GPU: {output name: DeviceArray}, each
        with __dlpack__ and __dlpack_device__, so torch.from_dlpack(a) and
        cupy.from_dlpack(a) take its memory without a copy (bool outputs come as
        int64 0/1; at precision "bf16" and "fp16" float32 inputs and outputs
        are tensors of the half type: TensorSpec.device_dtype). GPU inputs are
        copied device to device into the model's
        input buffers on the session's stream, after the work their producer
        had queued on its current stream (DLPack's stream handshake)."""
        return dict(zip((spec.name for spec in self.outputs), self._session.run(self._prepare(inputs), True)))

    def replay_ms(self, iters: int = 100, warmup: int = 10) -> float:
        """Median time of one CUDA-graph replay, without copies, by CUDA events
        (what `bench` reports for the model)."""
        return self._session.replay_ms(int(iters), int(warmup))

    def _prepare(self, inputs: Mapping[str, Any]) -> list:
        names = [spec.name for spec in self.inputs]
        unknown = [str(n) for n in inputs if n not in names]
        if unknown:
            raise _tgr.Error(f"the model has no input '{unknown[0]}' (its inputs: {', '.join(names)})")
        missing = [n for n in names if n not in inputs]
        if missing:
            raise _tgr.Error(f"no tensor given for the model's input '{missing[0]}' (its inputs: {', '.join(names)})")
        handshaken: set = set()
        return [self._prepare_one(spec, inputs[spec.name], handshaken) for spec in self.inputs]

    def _prepare_one(self, spec: TensorSpec, value: Any, handshaken: set) -> Any:
        """A DLPack capsule, or a C-contiguous NumPy array of spec's device type
        (a half type as its uint16 bits: encode_half).

        DLPack's stream handshake makes the session's stream wait for the work
        queued so far on the producer's *current* stream, whichever tensor it is
        asked for; so it is made once per run and producer type (torch, CuPy...)
        and device, and later tensors of the same producer pass stream=-1 (no
        synchronisation: the first handshake already covers them). A handshake
        costs a Python-level event record and wait in the producer."""
        if type(value).__name__ == "PyCapsule":  # a bare DLPack capsule: its producer has finished writing it
            return value
        if not isinstance(value, np.ndarray) and hasattr(value, "__dlpack_device__"):
            device_type, device_id = value.__dlpack_device__()
            if int(device_type) in _DLPACK_CUDA:
                producer = (type(value), int(device_id))
                if producer in handshaken:
                    return value.__dlpack__(stream=-1)
                handshaken.add(producer)
                return value.__dlpack__(stream=self._session.stream)
        array = np.asarray(value)
        if array.dtype.kind not in _DTYPE_KINDS[spec.dtype]:
            raise _tgr.Error(f"input '{spec.name}' is {spec.dtype}, given an array of {array.dtype}")
        if array.shape != spec.shape:
            shape = lambda s: "x".join(map(str, s)) or "scalar"
            raise _tgr.Error(f"input '{spec.name}' is {spec.dtype} {shape(spec.shape)}, given {shape(array.shape)}")
        array = np.ascontiguousarray(array, dtype=_HOST_DTYPES[spec.dtype])
        if spec.device_dtype in _HALF_TYPES:  # held in a half type on the GPU: its bits
            return _tgr.encode_half(array, spec.device_dtype)
        return array

    @staticmethod
    def _host_output(spec: TensorSpec, value: np.ndarray) -> np.ndarray:
        if spec.device_dtype in _HALF_TYPES:
            return _tgr.decode_half(value, spec.device_dtype)
        return value.astype(bool) if spec.dtype == "bool" else value

    def __repr__(self) -> str:
        return f"Session(inputs={[s.name for s in self.inputs]}, outputs={[s.name for s in self.outputs]})"
