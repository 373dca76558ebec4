"""The Python package tgr (python/): optimize, run, RulesDB and errors.

Run by ctest (python.tgr, with the package of the build tree on PYTHONPATH),
or after `pip install .` with `python3 -m pytest tests/python`.
"""
import os
import re
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest

import tgr

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "tests" / "data" / "models"
BERT = MODELS / "bert_tiny.onnx"
VIT = MODELS / "vit_tiny.onnx"


def load_test_data(model: str):
    """The bundled test data set of a model: ({input name: array}, [reference outputs])."""
    folder = MODELS / f"{model}-testdata"
    proto = onnx.load(str(MODELS / f"{model}.onnx"), load_external_data=False)
    initializers = {t.name for t in proto.graph.initializer}
    names = [i.name for i in proto.graph.input if i.name not in initializers]
    inputs = {name: onnx.numpy_helper.to_array(onnx.load_tensor(str(folder / f"input_{k}.pb")))
              for k, name in enumerate(names)}
    outputs = [onnx.numpy_helper.to_array(onnx.load_tensor(str(folder / "output_0.pb")))]
    return inputs, outputs


def onnxruntime_outputs(model, inputs):
    data = model.SerializeToString() if isinstance(model, onnx.ModelProto) else str(model)
    session = onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, inputs)))


def relative_l2(actual, expected):
    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    return np.linalg.norm(actual - expected) / max(np.linalg.norm(expected), 1e-30)


def check_optimized(original, optimized, report, inputs):
    """optimized is valid ONNX, cheaper, and computes what original computes
    (ONNX Runtime on both, and tgr's interpreter)."""
    onnx.checker.check_model(optimized)
    assert report["cost_after_us"] < report["cost_before_us"]
    assert report["rules_applied"], "no rule applied"
    expected = onnxruntime_outputs(original, inputs)
    from_ort = onnxruntime_outputs(optimized, inputs)
    from_tgr = tgr.run(optimized, inputs)
    assert set(from_ort) == set(expected) == set(from_tgr)
    for name, value in expected.items():
        assert from_ort[name].shape == value.shape
        assert relative_l2(from_ort[name], value) < 1e-4, name
        assert relative_l2(from_tgr[name], value) < 1e-4, name


def test_optimize_a_path():
    inputs, _ = load_test_data("bert_tiny")
    optimized, report = tgr.optimize(str(BERT), target="roofline")
    assert isinstance(optimized, onnx.ModelProto)
    assert report["model"] == str(BERT) and report["output"] is None
    # The QKV projections merged and attention's scale applied once (README.md, "Optimize a model"), for the
    # H100's roofline.
    assert report["operators_before"] == 110
    assert report["cost_ratio"] == pytest.approx(0.859, abs=0.005)  # equality saturation, the roofline's search
    assert report["search"]["kind"] == "saturation"
    assert report["rules_db"] == tgr.DEFAULT_RULES
    check_optimized(BERT, optimized, report, inputs)


def test_optimize_a_model_proto_with_options():
    inputs, _ = load_test_data("bert_tiny")
    model = onnx.load(str(BERT))
    optimized, report = tgr.optimize(model, target="roofline", search="backtrack", budget=50, sequential=True)
    assert report["model"] is None
    assert report["search"]["budget"] == 50
    check_optimized(model, optimized, report, inputs)


def test_optimize_with_saturation():
    inputs, _ = load_test_data("bert_tiny")
    optimized, report = tgr.optimize(BERT, target="roofline", search="saturate", timeout=5)
    check_optimized(BERT, optimized, report, inputs)


def test_optimize_with_saturation_then_backtracking():
    inputs, _ = load_test_data("bert_tiny")
    optimized, report = tgr.optimize(BERT, target="roofline", search="both", timeout=5)
    assert set(report["search"]) == {"saturation", "backtracking", "backtracking_from_input", "kept"}
    assert report["search"]["kept"] in ("saturation", "saturation, then backtracking", "backtracking from the input")
    check_optimized(BERT, optimized, report, inputs)
    with pytest.raises(ValueError, match="expected 'backtrack', 'saturate' or 'both'"):
        tgr.optimize(BERT, search="anneal")
    with pytest.raises(ValueError, match="refine_window=-1: must be a whole number, 0 or more"):
        tgr.optimize(BERT, refine_window=-1)


def test_the_node_limit_follows_the_models_size_unless_given():
    # BERT-tiny starts with 143 e-nodes, fewer than 5,000 / 20: growth 20
    # gives the floor; a node_limit given is that limit alone.
    _, scaled = tgr.optimize(BERT, target="roofline", search="saturate", node_growth=20, iterations=1)
    assert scaled["search"]["node_limit"] == 5000
    _, given = tgr.optimize(BERT, target="roofline", search="saturate", node_limit=7000, iterations=1)
    assert given["search"]["node_limit"] == 7000
    _, default = tgr.optimize(BERT, target="roofline", search="saturate", iterations=1)
    assert default["search"]["node_limit"] == 120 * 143
    # tgr-gpu's growth is 0: the absolute limit alone, unless a growth is given.
    _, gpu = tgr.optimize(BERT, target="tgr-gpu", device="no-such-gpu", search="saturate", iterations=1)
    assert gpu["search"]["node_limit"] == 50000
    _, gpu_scaled = tgr.optimize(BERT, target="tgr-gpu", device="no-such-gpu", search="saturate", node_growth=20,
                                 iterations=1)
    assert gpu_scaled["search"]["node_limit"] == 5000
    with pytest.raises(ValueError, match="node_limit excludes node_growth"):
        tgr.optimize(BERT, node_limit=7000, node_growth=10)
    with pytest.raises(ValueError, match="node_growth=-1: must not be negative"):
        tgr.optimize(BERT, node_growth=-1)


def test_convert_to_a_half_type_unmeasured():
    # tgr.optimize() takes the program's --convert-to and --convert-io as
    # keywords (one option table); the package carries no timing script, so
    # nothing is measured, for a converted model or another.
    _, report = tgr.optimize(BERT, target="roofline", convert_to="float16", timeout=5)
    assert report["conversion"]["to"] == "float16"
    assert report["conversion"]["convert_io"] is False
    assert max(report["conversion"]["relative_l2_vs_float32"]) < 0.05
    assert report["measured"] is None
    _, ort = tgr.optimize(BERT, timeout=5)
    assert ort["target"] == "onnxruntime-cpu" and ort["measured"] is None
    with pytest.raises(ValueError, match="convert_io needs convert_to"):
        tgr.optimize(BERT, convert_io=True)
    with pytest.raises(ValueError, match="expected 'float16' or 'bfloat16'"):
        tgr.optimize(BERT, convert_to="int8")
    with pytest.raises(TypeError, match="unexpected keyword argument 'no_measure'"):
        tgr.optimize(BERT, no_measure=True)


def test_the_iteration_limit_is_the_targets_unless_given():
    # 20 for the roofline (and onnxruntime-cpu), 100 for tgr-gpu, whose time
    # and node limits decide; iterations= replaces it.
    _, roofline = tgr.optimize(BERT, target="roofline", search="saturate", timeout=1)
    assert roofline["search"]["iteration_limit"] == 20
    _, gpu = tgr.optimize(BERT, target="tgr-gpu", device="no-such-gpu", search="saturate", timeout=1)
    assert gpu["search"]["iteration_limit"] == 100
    assert gpu["search"]["iterations"] <= 100
    _, given = tgr.optimize(BERT, target="tgr-gpu", device="no-such-gpu", search="saturate", iterations=3)
    assert given["search"]["iteration_limit"] == 3
    assert given["search"]["iterations"] <= 3


def test_an_exploring_search_prices_unmeasured_steps_below_their_guess():
    _, default = tgr.optimize(BERT, target="tgr-gpu", device="no-such-gpu", search="saturate", iterations=1)
    assert "priced x1.25" in default["cost_model"]
    _, exploring = tgr.optimize(BERT, target="tgr-gpu", device="no-such-gpu", search="saturate", iterations=1,
                                unmeasured_margin=0.5)
    assert "priced x0.50" in exploring["cost_model"]
    # Every step is a guess here (no table for this device): the same graph costs half as much.
    assert exploring["cost_before_us"] == pytest.approx(default["cost_before_us"] * 0.5 / 1.25, rel=1e-4)
    with pytest.raises(ValueError, match="unmeasured_margin=0: must be positive"):
        tgr.optimize(BERT, target="tgr-gpu", unmeasured_margin=0)


def test_refinement_windows_screen_moves_and_zero_builds_every_move_whole():
    # tgr-gpu with no table: the fitted plan costs, which fuse operators, so
    # saturation refines its graph; each move screened by its window first.
    inputs, _ = load_test_data("bert_tiny")
    screened = {}
    for window in (3, 0):
        optimized, report = tgr.optimize(BERT, target="tgr-gpu", device="no-such-gpu", search="saturate",
                                         timeout=4, refine_window=window)
        refine = report["search"]["refine"]
        screened[window] = refine["screened"]
        assert refine["tries"] > 0
        check_optimized(BERT, optimized, report, inputs)
    assert screened[3] > 0
    assert screened[0] == 0


def test_input_shapes_fix_a_symbolic_dimension():
    model = onnx.load(str(VIT))
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    with pytest.raises(tgr.Error, match="graph input 'x' has a symbolic dimension 'batch'"):
        tgr.optimize(model)
    optimized, report = tgr.optimize(model, input_shapes={"x": [1, 3, 32, 32]})
    onnx.checker.check_model(optimized)
    assert report["operators_after"] <= report["operators_before"]
    inputs, expected = load_test_data("vit_tiny")
    outputs = tgr.run(model, inputs, input_shapes={"x": [1, 3, 32, 32]})
    assert relative_l2(next(iter(outputs.values())), expected[0]) < 1e-4


@pytest.mark.parametrize("model", ["bert_tiny", "squeezenet1_1"])
def test_run_matches_the_reference_outputs(model):
    inputs, expected = load_test_data(model)
    outputs = tgr.run(MODELS / f"{model}.onnx", inputs)
    assert len(outputs) == 1
    (value,) = outputs.values()
    assert value.dtype == np.float32 and value.shape == expected[0].shape
    assert relative_l2(value, expected[0]) < 1e-4


def test_run_names_missing_and_unknown_inputs():
    inputs, _ = load_test_data("bert_tiny")
    with pytest.raises(tgr.Error, match=re.escape("no tensor given for the model's input 'input.1'")):
        tgr.run(BERT, {})
    with pytest.raises(tgr.Error, match=re.escape("the model has no input 'ids' (its inputs: input.1)")):
        tgr.run(BERT, dict(inputs, ids=np.zeros(3)))


def test_a_file_that_is_not_a_model(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"this is not a protobuf")
    for call in (lambda: tgr.optimize(bad), lambda: tgr.run(bad, {})):
        with pytest.raises(tgr.Error, match=re.escape(str(bad))):
            call()
    with pytest.raises(tgr.Error, match="missing.onnx"):
        tgr.optimize(tmp_path / "missing.onnx")


def test_an_unsupported_operator_is_named():
    node = onnx.helper.make_node("Frobnicate", ["x"], ["y"])
    graph = onnx.helper.make_graph([node], "g", [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2])],
                                   [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2])])
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)])
    with pytest.raises(tgr.Error, match="Frobnicate"):
        tgr.run(model, {"x": np.ones(2, np.float32)})


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown target 'tpu'"):
        tgr.optimize(BERT, target="tpu")
    with pytest.raises(TypeError, match="budgett"):
        tgr.optimize(BERT, budgett=3)
    with pytest.raises(ValueError, match="alpha"):
        tgr.optimize(BERT, alpha=0.5)
    with pytest.raises(tgr.Error, match="no such database"):
        tgr.optimize(BERT, rules="/nonexistent/rules.db")


def test_rules_db_queries():
    db = tgr.RulesDB()
    assert db.path == tgr.DEFAULT_RULES
    stats = db.stats()
    assert stats["rules"] == len(db) == sum(stats["by_status"].values()) == sum(stats["by_size"].values())
    proved = db.rules("proved")
    assert len(proved) == stats["by_status"]["proved"] > 0
    everything = db.rules()
    assert len(everything) == stats["rules"]
    assert [r["id"] for r in everything] == sorted(r["id"] for r in everything)
    # rules lookup, any spelling (README.md, "Query rules").
    rule = db.lookup("relu(conv2d(i0, k0)) => conv2d[act=relu](i0, k0)")
    assert rule["status"] == "proved"
    assert rule["canonical"] == "conv2d[act=relu](i0, k0) => relu(conv2d(i0, k0))"
    assert db.rule(rule["id"]) == rule
    assert db.status("relu(conv2d(i0, k0)) => conv2d[act=relu](i0, k0)") == "proved"
    assert db.lookup("matmul(w0, w1) => matmul(w1, w0)") is None
    assert db.status("matmul(w0, w1) => matmul(w1, w0)") is None
    assert db.rule(10**9) is None
    with pytest.raises(tgr.Error):
        db.lookup("matmul(w0, => w1")


def test_rules_db_errors(tmp_path):
    with pytest.raises(tgr.Error, match=re.escape("no such database")):
        tgr.RulesDB(tmp_path / "none.db")
    not_db = tmp_path / "text.db"
    not_db.write_text("hello")
    with pytest.raises(tgr.Error, match="text.db"):
        tgr.RulesDB(not_db)


def test_readme_example():
    """The Python example of README.md runs as shown."""
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    assert blocks, "README.md has no python block"
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        for block in blocks:
            exec(compile(block, "README.md", "exec"), {})
    finally:
        os.chdir(cwd)
