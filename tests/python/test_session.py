"""tgr.Session, the GPU session (python/tgr/session.py, python/session_bindings.cpp).

Without a GPU (or in a build without CUDA) the tests check the refusal; the
tests marked `gpu` run where a CUDA device is visible (on the GPU machine:
tools/device/session_bench.sh runs this file), and those marked `torch` where
PyTorch sees it too.
"""
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

import tgr

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "tests" / "data" / "models"
SQUEEZENET = MODELS / "squeezenet1_1.onnx"
BERT = MODELS / "bert_tiny.onnx"
EXAMPLE = ROOT / "examples" / "run_on_gpu.py"

gpu = pytest.mark.skipif(not tgr.gpu_available(), reason="no CUDA device is visible")


def torch_on_gpu():
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


with_torch = pytest.mark.skipif(not tgr.gpu_available() or torch_on_gpu() is None, reason="no PyTorch on a GPU")


def bundled_data(model: str):
    folder = MODELS / f"{model}-testdata"
    inputs = [onnx.numpy_helper.to_array(onnx.load_tensor(str(p))) for p in sorted(folder.glob("input_*.pb"))]
    outputs = [onnx.numpy_helper.to_array(onnx.load_tensor(str(p))) for p in sorted(folder.glob("output_*.pb"))]
    return inputs, outputs


def relative_l2(actual, expected):
    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    return np.linalg.norm(actual - expected) / max(np.linalg.norm(expected), 1e-30)


def expected_refusal() -> str:
    """What creating a Session says on this machine when it cannot have one."""
    if not tgr.cuda_build():
        return "this tgr was built without CUDA"
    return "no CUDA device is visible"


@pytest.mark.skipif(tgr.gpu_available(), reason="a GPU is visible: the sessions run (the gpu tests)")
def test_session_refused_without_gpu_names_model_and_reason():
    with pytest.raises(tgr.Error) as raised:
        tgr.Session(SQUEEZENET)
    message = str(raised.value)
    assert message.startswith(f"'{SQUEEZENET}': "), message
    assert expected_refusal() in message, message


@pytest.mark.skipif(tgr.gpu_available(), reason="a GPU is visible: the example runs (test_example_runs_on_gpu)")
def test_example_script_fails_cleanly_without_gpu():
    done = subprocess.run([sys.executable, str(EXAMPLE), str(SQUEEZENET)], capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.startswith(f"run_on_gpu.py: error: '{SQUEEZENET}': {expected_refusal()}"), done.stderr


def test_session_options_are_checked_before_loading():
    with pytest.raises(ValueError):
        tgr.Session(SQUEEZENET, input_shapes={"data": ["one"]})
    with pytest.raises(TypeError):
        tgr.Session(SQUEEZENET, 3)  # the options are keywords


def test_session_is_exported():
    assert {"Session", "TensorSpec", "cuda_build", "gpu_available"} <= set(tgr.__all__)
    assert isinstance(tgr.cuda_build(), bool) and isinstance(tgr.gpu_available(), bool)
    if not tgr.cuda_build():
        assert not tgr.gpu_available()


@gpu
def test_example_runs_on_gpu():
    done = subprocess.run([sys.executable, str(EXAMPLE), str(SQUEEZENET)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].split(" (1, 1000) ")[0] in {o.name for o in tgr.Session(SQUEEZENET).outputs}


@gpu
@pytest.mark.parametrize("model", ["squeezenet1_1", "bert_tiny"])
def test_run_numpy_matches_reference(model):
    session = tgr.Session(MODELS / f"{model}.onnx")
    inputs, expected = bundled_data(model)
    outputs = session.run({spec.name: x for spec, x in zip(session.inputs, inputs)})
    assert list(outputs) == [spec.name for spec in session.outputs]
    for value, reference in zip(outputs.values(), expected):
        assert value.shape == reference.shape
        assert relative_l2(value, reference) < 1e-4
    # Many runs of one session: the same outputs.
    again = session.run({spec.name: x for spec, x in zip(session.inputs, inputs)})
    for name in outputs:
        np.testing.assert_array_equal(outputs[name], again[name])
    assert session.replay_ms(iters=5, warmup=1) > 0


@gpu
def test_bad_inputs_name_the_input():
    session = tgr.Session(BERT)
    name = session.inputs[0].name
    with pytest.raises(tgr.Error, match=f"the model has no input 'nope' \\(its inputs: {name}\\)"):
        session.run({"nope": np.zeros(session.inputs[0].shape, np.int64)})
    with pytest.raises(tgr.Error, match=f"no tensor given for the model's input '{name}'"):
        session.run({})
    with pytest.raises(tgr.Error, match=f"input '{name}' is int64 1x64, given 1x63"):
        session.run({name: np.zeros((1, 63), np.int64)})
    with pytest.raises(tgr.Error, match=f"input '{name}' is int64, given an array of float32"):
        session.run({name: np.zeros((1, 64), np.float32)})


@gpu
def test_precisions_run_and_half_storage_converts_at_the_boundary():
    session = tgr.Session(MODELS / "squeezenet1_1.onnx", precision="tf32")
    inputs, expected = bundled_data("squeezenet1_1")
    (value,) = session.run({spec.name: x for spec, x in zip(session.inputs, inputs)}).values()
    assert relative_l2(value, expected[0]) < 1e-2
    for precision, half, tolerance in (("bf16", "bfloat16", 2e-2), ("fp16", "float16", 5e-3)):
        session = tgr.Session(MODELS / "squeezenet1_1.onnx", precision=precision)
        assert session.inputs[0].dtype == "float32" and session.inputs[0].device_dtype == half
        (value,) = session.run({spec.name: x for spec, x in zip(session.inputs, inputs)}).values()
        assert value.dtype == np.float32 and relative_l2(value, expected[0]) < tolerance
    with pytest.raises(tgr.Error, match="precision 'f32' is not one of"):
        tgr.Session(MODELS / "squeezenet1_1.onnx", precision="f32")


def test_half_bits_round_trip():
    values = np.array([[1.0, -2.5, 3.14159, 65504.0, 1e-3]], np.float32)
    for half, numpy_type in (("float16", np.float16), ("bfloat16", None)):
        bits = tgr._tgr.encode_half(values, half)
        assert bits.dtype == np.uint16 and bits.shape == values.shape
        if numpy_type is not None:  # NumPy's own float16 rounding, bit for bit
            np.testing.assert_array_equal(bits, values.astype(numpy_type).view(np.uint16))
        back = tgr._tgr.decode_half(bits, half)
        np.testing.assert_allclose(back, values, rtol=1e-2 if half == "bfloat16" else 1e-3)
    with pytest.raises(ValueError, match="'float32' is not a half type"):
        tgr._tgr.encode_half(values, "float32")


@with_torch
def test_dlpack_at_bf16_takes_and_returns_bfloat16():
    torch = torch_on_gpu()
    session = tgr.Session(SQUEEZENET, precision="bf16")
    inputs, expected = bundled_data("squeezenet1_1")
    name = session.inputs[0].name
    host = list(session.run({name: inputs[0]}).values())[0]
    (array,) = session.run_dlpack({name: torch.from_numpy(inputs[0]).cuda().bfloat16()}).values()
    assert array.dtype == "bfloat16"
    y = torch.from_dlpack(array)
    assert y.dtype == torch.bfloat16
    np.testing.assert_array_equal(y.float().cpu().numpy(), host)
    with pytest.raises(tgr.Error, match=f"input '{name}' is bfloat16 on the GPU at this precision"):
        session.run_dlpack({name: torch.from_numpy(inputs[0]).cuda()})


@gpu
def test_missing_model_is_named():
    with pytest.raises(tgr.Error, match="no_such_model.onnx"):
        tgr.Session("no_such_model.onnx")


@with_torch
def test_dlpack_in_and_out_without_copies():
    torch = torch_on_gpu()
    session = tgr.Session(SQUEEZENET)
    inputs, expected = bundled_data("squeezenet1_1")
    x = torch.from_numpy(inputs[0]).cuda()
    outputs = session.run_dlpack({session.inputs[0].name: x})
    (array,) = outputs.values()
    assert array.__dlpack_device__() == (2, session.device)
    assert array.shape == expected[0].shape and array.dtype == "float32"
    y = torch.from_dlpack(array)
    assert y.is_cuda and y.data_ptr() == array.data_ptr  # torch reads the session's allocation itself
    assert relative_l2(y.cpu().numpy(), expected[0]) < 1e-4
    # The output outlives the next run and the session.
    second = session.run_dlpack({session.inputs[0].name: x * 0})
    del session, second
    assert relative_l2(y.cpu().numpy(), expected[0]) < 1e-4
    # GPU inputs with NumPy outputs, and a CPU tensor taken as a host array.
    session = tgr.Session(SQUEEZENET)
    from_gpu = session.run({session.inputs[0].name: x})
    from_cpu = session.run({session.inputs[0].name: x.cpu()})
    np.testing.assert_array_equal(list(from_gpu.values())[0], list(from_cpu.values())[0])


@with_torch
def test_dlpack_inputs_are_checked():
    torch = torch_on_gpu()
    session = tgr.Session(SQUEEZENET)
    name = session.inputs[0].name
    shape = session.inputs[0].shape
    with pytest.raises(tgr.Error, match="not contiguous"):
        session.run_dlpack({name: torch.zeros(tuple(reversed(shape)), device="cuda").permute(3, 2, 1, 0)})
    with pytest.raises(tgr.Error, match=f"input '{name}' is float32, given a DLPack tensor of type code 0, 64 bits"):
        session.run_dlpack({name: torch.zeros(shape, dtype=torch.int64, device="cuda")})
    with pytest.raises(tgr.Error, match=f"input '{name}' is 1x3x224x224, given 1x3x224x223"):
        session.run_dlpack({name: torch.zeros((1, 3, 224, 223), device="cuda")})
