#!/usr/bin/env python3
"""Bad inputs the command-line programs must refuse with a clear message.

One case per ctest (tests/CMakeLists.txt, `ctest -L reliability`):

    probe.py BIN_DIR WORK_DIR CASE      # run one case
    probe.py --list                     # the cases

Each case writes its inputs under WORK_DIR/CASE, runs a program and checks
its exit status and message, and that it wrote nothing it should not have
(outputs absent, inputs byte-for-byte unchanged). A crash (a signal, or an
exit status other than the expected one) fails the case. Models are written
with the onnx package (tools/test.sh installs it).
"""
import hashlib
import os
import re
import resource
import shutil
import signal
import stat
import sqlite3
import subprocess
import sys
import time

try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:  # --list works without them; the cases say what is missing
    MISSING = str(e)
else:
    MISSING = None

CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


class Ctx:
    def __init__(self, bin_dir, work):
        self.bin = bin_dir
        self.work = work

    def path(self, *parts):
        return os.path.join(self.work, *parts)

    def run(self, prog, *args, code, message, timeout=120, env=None, peak=None):
        """Runs bin/PROG ARGS; checks the exit status and that stderr+stdout match `message`.

        With `peak` (a list), appends the program's peak resident memory in MB: it runs under a small
        Python (-S) that reads its child's ru_maxrss, since a child forked from this process counts this
        process's pages (onnx and numpy: 50 to 90 MB) in its own peak."""
        cmd = [os.path.join(self.bin, prog)] + [str(a) for a in args]
        peak_file = self.path("peak.kb")
        if peak is not None:
            cmd = [sys.executable, "-S", "-c", PEAK_HELPER, peak_file] + cmd
        start = time.monotonic()
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        if peak is not None:
            with open(peak_file) as f:
                peak.append(int(f.read()) / 1024)
        took = time.monotonic() - start
        out = p.stdout + p.stderr
        shown = " ".join(cmd) + f"\n  exit {p.returncode} after {took:.1f} s\n  output: {out[-2000:]}"
        if p.returncode < 0:
            fail(f"crashed with signal {signal.Signals(-p.returncode).name}: {shown}")
        if p.returncode != code:
            fail(f"expected exit {code}: {shown}")
        if message and not re.search(message, out, re.S):
            fail(f"expected a message matching {message!r}: {shown}")
        print(f"ok: {prog} exit {p.returncode} in {took:.1f} s: {out.strip().splitlines()[-1] if out.strip() else ''}")
        return out


# Runs argv[2:] and writes its peak resident memory (KB) to argv[1]; exits as it did.
PEAK_HELPER = (
    "import resource, subprocess, sys\n"
    "r = subprocess.run(sys.argv[2:])\n"
    "open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))\n"
    "sys.exit(r.returncode if r.returncode >= 0 else 128 - r.returncode)\n")


def fail(what):
    print("FAIL: " + what)
    sys.exit(1)


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def save(model, path):
    onnx.save(model, path)
    return path


def model(nodes, inputs, outputs, initializers=(), opset=17):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def vinfo(name, shape, elem=None):  # elem None: float (TensorProto may be missing at --list)
    return helper.make_tensor_value_info(name, TensorProto.FLOAT if elem is None else elem, shape)


def tensor_file(path, array, name="x"):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(array, name).SerializeToString())
    return path


def x_input(ctx, shape=(1, 4)):
    return tensor_file(ctx.path("x.pb"), np.ones(shape, np.float32))


def run_model(ctx, m, message, extra=(), shape=(1, 4)):
    path = save(m, ctx.path("m.onnx"))
    ctx.run("run", "--model", path, "--inputs", x_input(ctx, shape), "--output-dir", ctx.path("out"), *extra,
            code=1, message=message)
    if os.path.exists(ctx.path("out")):
        fail("run wrote outputs though it failed")


# ---- ONNX models ----


@case
def split_num_outputs_zero(ctx):
    n = helper.make_node("Split", ["x"], ["a"], name="split0", axis=1, num_outputs=0)
    run_model(ctx, model([n], [vinfo("x", [1, 4])], [vinfo("a", None)], opset=18),
              r"run: error: .*node 'split0' \(Split, opset 18\): num_outputs is 0; it must be at least 1")


@case
def split_num_outputs_negative(ctx):
    n = helper.make_node("Split", ["x"], ["a"], name="split1", axis=1, num_outputs=-1)
    run_model(ctx, model([n], [vinfo("x", [1, 4])], [vinfo("a", None)], opset=18),
              r"node 'split1' \(Split, opset 18\): num_outputs is -1")


@case
def concat_no_inputs(ctx):
    n = helper.make_node("Concat", [], ["a"], name="cat", axis=0)
    r = helper.make_node("Relu", ["x"], ["b"], name="r")
    run_model(ctx, model([n, r], [vinfo("x", [1, 4])], [vinfo("a", None), vinfo("b", None)]),
              r"node 'cat' \(Concat, opset 17\): takes at least 1 input\(s\), given 0")


@case
def relu_three_inputs(ctx):
    n = helper.make_node("Relu", ["x", "x", "x"], ["a"], name="relu3")
    run_model(ctx, model([n], [vinfo("x", [1, 4])], [vinfo("a", None)]),
              r"node 'relu3' \(Relu, opset 17\): takes 1 input\(s\), given 3")


@case
def two_nodes_write_one_value(ctx):
    a = helper.make_node("Relu", ["x"], ["y"], name="first")
    b = helper.make_node("Neg", ["x"], ["y"], name="second")
    run_model(ctx, model([a, b], [vinfo("x", [1, 4])], [vinfo("y", None)]),
              r"value 'y' is written by two nodes: 'first' \(Relu\) and 'second' \(Neg\)")


@case
def input_shape_differs_from_declared(ctx):
    n = helper.make_node("Relu", ["x"], ["y"], name="r")
    run_model(ctx, model([n], [vinfo("x", [1, 4])], [vinfo("y", None)]),
              r"graph input 'x' is declared 1x4, given a tensor of shape 2x4", shape=(2, 4))


def shape_const(name, values):
    return numpy_helper.from_array(np.array(values, np.int64), name)


@case
def constant_of_shape_2_pow_31(ctx):
    # A 145-byte model that once reached 12 GB.
    n = helper.make_node("ConstantOfShape", ["s"], ["c"], name="cos")
    add = helper.make_node("Add", ["x", "c"], ["y"], name="add")
    m = model([n, add], [vinfo("x", [1])], [vinfo("y", None)], [shape_const("s", [1 << 31])])
    run_model(ctx, m, r"node 'cos' \(ConstantOfShape, opset 17\): a tensor of 2147483648 elements is larger than "
                      r"the limit of 268435456 \(raise it with --max-elements\)", shape=(1,))


@case
def limits_flag_raises_and_lowers(ctx):
    n = helper.make_node("ConstantOfShape", ["s"], ["c"], name="cos")
    add = helper.make_node("Add", ["x", "c"], ["y"], name="add")
    path = save(model([n, add], [vinfo("x", [1])], [vinfo("y", None)], [shape_const("s", [1000])]), ctx.path("m.onnx"))
    x = tensor_file(ctx.path("x.pb"), np.ones((1,), np.float32))
    ctx.run("run", "--model", path, "--inputs", x, "--output-dir", ctx.path("a"), code=0, message=r"output_0\.pb")
    ctx.run("run", "--model", path, "--inputs", x, "--output-dir", ctx.path("b"), "--max-elements", 999, code=1,
            message=r"a tensor of 1000 elements is larger than the limit of 999")
    ctx.run("run", "--model", path, "--inputs", x, "--output-dir", ctx.path("c"), "--max-bytes", 3999, code=1,
            message=r"node 'cos' .*would take 4008 bytes, more than the limit of 3999 \(raise it with --max-bytes\)")


@case
def range_huge(ctx):
    n = helper.make_node("Range", ["a", "b", "d"], ["r"], name="range")
    add = helper.make_node("Add", ["x", "r"], ["y"], name="add")
    inits = [numpy_helper.from_array(np.array(v, np.float32), k) for k, v in (("a", 0), ("b", 1e18), ("d", 1))]
    run_model(ctx, model([n, add], [vinfo("x", [1])], [vinfo("y", None)], inits),
              r"node 'range' \(Range, opset 17\): a tensor of [0-9]{18} elements is larger than the limit",
              shape=(1,))


@case
def expand_huge(ctx):
    n = helper.make_node("Expand", ["x", "s"], ["y"], name="expand")
    run_model(ctx, model([n], [vinfo("x", [1, 1])], [vinfo("y", None)], [shape_const("s", [1 << 20, 1 << 20])]),
              r"node 'expand' \(Expand, opset 17\): a tensor of 1099511627776 elements is larger than the limit",
              shape=(1, 1))


@case
def pad_huge(ctx):
    n = helper.make_node("Pad", ["x", "p"], ["y"], name="pad")
    run_model(ctx, model([n], [vinfo("x", [1, 4])], [vinfo("y", None)], [shape_const("p", [0, 0, 1 << 40, 0])]),
              r"node 'pad' \(Pad, opset 17\): a tensor of [0-9]+ elements is larger than the limit")


def relu_chain(length):
    nodes = [helper.make_node("Relu", [f"v{i}"], [f"v{i + 1}"], name=f"r{i}") for i in range(length)]
    return model(nodes, [vinfo("v0", [1, 4])], [vinfo(f"v{length}", [1, 4])])


@case
def run_chain_of_100000_nodes(ctx):
    path = save(relu_chain(100_000), ctx.path("m.onnx"))
    x = tensor_file(ctx.path("x.pb"), np.ones((1, 4), np.float32), "v0")
    ctx.run("run", "--model", path, "--inputs", x, "--output-dir", ctx.path("out"), code=0, message=r"output_0\.pb",
            timeout=600)


@case
def optimize_chain_of_40000_nodes(ctx):
    path = save(relu_chain(40_000), ctx.path("m.onnx"))
    ctx.run("optimize", path, "-o", ctx.path("out.onnx"), "-q", "--budget", 3, code=0, message=None, timeout=600)
    if not os.path.exists(ctx.path("out.onnx")):
        fail("optimize wrote no model")


@case
def external_data_symlink_outside(ctx):
    os.makedirs(ctx.path("model"))
    secret = ctx.path("secret.bin")  # outside the model's folder
    with open(secret, "wb") as f:
        f.write(np.arange(4, dtype=np.float32).tobytes())
    os.symlink(os.path.join("..", "secret.bin"), ctx.path("model", "w.bin"))
    w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1, 4])
    w.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "w.bin"), ("offset", "0"), ("length", "16")):
        e = w.external_data.add()
        e.key, e.value = k, v
    n = helper.make_node("Add", ["x", "w"], ["y"], name="add")
    path = ctx.path("model", "m.onnx")
    with open(path, "wb") as f:
        f.write(model([n], [vinfo("x", [1, 4])], [vinfo("y", None)], [w]).SerializeToString())
    message = r"'.*m\.onnx': tensor 'w': external data file '.*w\.bin' resolves to '.*secret\.bin', outside the model's folder"
    ctx.run("run", "--model", path, "--inputs", x_input(ctx), "--output-dir", ctx.path("out"), code=1, message=message)
    ctx.run("optimize", path, "-o", ctx.path("out.onnx"), code=1, message=message)
    for p in ("out", "out.onnx"):
        if os.path.exists(ctx.path(p)):
            fail(f"{p} was written")


@case
def initializer_given_twice(ctx):
    w1 = numpy_helper.from_array(np.ones((1, 4), np.float32), "w")
    w2 = numpy_helper.from_array(np.full((1, 4), 2, np.float32), "w")
    n = helper.make_node("Add", ["x", "w"], ["y"], name="add")
    path = save(model([n], [vinfo("x", [1, 4])], [vinfo("y", [1, 4])], [w1, w2]), ctx.path("m.onnx"))
    message = r"'.*m\.onnx': initializer 'w' is given twice; a graph names each value once"
    ctx.run("optimize", path, "-o", ctx.path("o.onnx"), code=1, message="optimize: error: " + message)
    ctx.run("run", "--model", path, "--inputs", x_input(ctx), "--output-dir", ctx.path("out"), code=1, message=message)
    for p in ("o.onnx", "out"):
        if os.path.exists(ctx.path(p)):
            fail(f"{p} was written")


def ort_outputs(path, feeds):
    import onnxruntime as ort
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def same_results(ctx, original, optimized, feeds_list):
    """The optimized model passes onnx.checker and computes what the original does for every feed."""
    onnx.checker.check_model(onnx.load(optimized), full_check=True)
    for feeds in feeds_list:
        want, got = ort_outputs(original, feeds), ort_outputs(optimized, feeds)
        if len(want) != len(got) or any(not np.allclose(a, b) for a, b in zip(want, got)):
            fail(f"{optimized} computes {got}, the model {want}, for {feeds}")
    print(f"ok: {os.path.basename(optimized)} passes onnx.checker and matches the model on {len(feeds_list)} feeds")


def relu_rules(ctx):
    """Options for optimize: a database of one proved rule, relu(relu(x)) => relu(x), alone."""
    db = ctx.path("relu.db")
    if not os.path.exists(db):
        rules = ctx.path("relu.rules")
        with open(rules, "w") as f:
            f.write("relu(relu(x0)) => relu(x0) | x0=1x4\n")
        ctx.run("rules", "--db", db, "import", rules, code=0, message=None)
        ctx.run("verify", "--db", db, code=0, message=r"relu_idempotent")
    return ["--rules", db, "--no-default-rules", "-q", "--search", "backtrack"]


def optimize_rewrites(ctx, path, out, *extra):
    """Runs optimize with relu_rules and checks that the rule applied (the model was re-exported)."""
    ctx.run("optimize", path, "-o", out, "--report", out + ".json", *relu_rules(ctx), *extra, code=0, message=None)
    import json
    with open(out + ".json") as f:
        applied = json.load(f)["rules_applied"]
    if not applied:
        fail("relu(relu(x)) => relu(x) did not apply; the test needs a rewritten model")


def if_model(then_nodes, else_nodes, outer_nodes, inits=(), then_inits=()):
    """y = If(c) over x [1, 4]; each branch's nodes write its output 'o'."""
    then_g = helper.make_graph(then_nodes, "then", [], [vinfo("o", [1, 4])], list(then_inits))
    else_g = helper.make_graph(else_nodes, "else", [], [vinfo("o", [1, 4])])
    cond = helper.make_node("If", ["c"], ["y"], name="if", then_branch=then_g, else_branch=else_g)
    return model(outer_nodes + [cond], [vinfo("x", [1, 4]), vinfo("c", [], TensorProto.BOOL)],
                 [vinfo("y", [1, 4])], list(inits))


def if_feeds():
    x = np.array([[-1.5, 0.5, 2.0, -3.0]], np.float32)
    return [{"x": x, "c": np.array(True)}, {"x": x, "c": np.array(False)}]


@case
def subgraph_captures_outer_values(ctx):
    # The branches read r2 and w from the outer graph by name; the rewrite of relu(relu(x)) removes r2's producer.
    outer = [helper.make_node("Relu", ["x"], ["r1"], name="r1"), helper.make_node("Relu", ["r1"], ["r2"], name="r2")]
    w = numpy_helper.from_array(np.array([[1, 2, 3, 4]], np.float32), "w")
    outer += [helper.make_node("Relu", ["x"], ["q1"], name="q1"), helper.make_node("Relu", ["q1"], ["z"], name="q2")]
    m = if_model([helper.make_node("Add", ["r2", "w"], ["o"], name="add")],
                 [helper.make_node("Neg", ["r2"], ["o"], name="neg")], outer, [w])
    m.graph.output.append(vinfo("z", [1, 4]))  # rewritten as well
    path = save(m, ctx.path("m.onnx"))
    optimize_rewrites(ctx, path, ctx.path("o.onnx"))
    same_results(ctx, path, ctx.path("o.onnx"), if_feeds())


@case
def subgraph_external_data(ctx):
    # A branch's initializer in a file beside the model; the output is written to another folder.
    os.makedirs(ctx.path("model"))
    os.makedirs(ctx.path("out"))
    with open(ctx.path("model", "w.bin"), "wb") as f:
        f.write(np.array([[1, 2, 3, 4]], np.float32).tobytes())
    w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1, 4])
    w.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "w.bin"), ("offset", "0"), ("length", "16")):
        e = w.external_data.add()
        e.key, e.value = k, v
    outer = [helper.make_node("Relu", ["x"], ["r1"], name="r1"), helper.make_node("Relu", ["r1"], ["r2"], name="r2")]
    m = if_model([helper.make_node("Add", ["x", "w"], ["o"], name="add")],
                 [helper.make_node("Neg", ["x"], ["o"], name="neg")], outer, then_inits=[w])
    m.graph.output.append(vinfo("r2", [1, 4]))
    path = ctx.path("model", "m.onnx")
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    out = ctx.path("out", "o.onnx")
    optimize_rewrites(ctx, path, out)
    same_results(ctx, path, out, if_feeds())


@case
def external_data_longer_than_dims(ctx):
    # A 1x4 tensor over a 64 MB file: refused by its length before anything is read.
    with open(ctx.path("w.bin"), "wb") as f:
        f.truncate(64 << 20)
    w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1, 4])
    w.data_location = TensorProto.EXTERNAL
    e = w.external_data.add()
    e.key, e.value = "location", "w.bin"
    n = helper.make_node("Add", ["x", "w"], ["y"], name="add")
    path = ctx.path("m.onnx")
    with open(path, "wb") as f:
        f.write(model([n], [vinfo("x", [1, 4])], [vinfo("y", [1, 4])], [w]).SerializeToString())
    ctx.run("optimize", path, "-o", ctx.path("o.onnx"), code=1,
            message=r"tensor 'w': external data of 67108864 bytes in '.*w\.bin', 16 expected for its dims and FLOAT")
    if os.path.exists(ctx.path("o.onnx")):
        fail("an output was written")


@case
def model_local_functions_kept(ctx):
    body = [helper.make_node("Relu", ["a"], ["b"], name="inner")]
    f = helper.make_function("custom", "MyRelu", ["a"], ["b"], body, [helper.make_opsetid("", 17)])
    nodes = [helper.make_node("MyRelu", ["x"], ["f"], name="call", domain="custom"),
             helper.make_node("Relu", ["f"], ["r1"], name="r1"), helper.make_node("Relu", ["r1"], ["y"], name="r2")]
    g = helper.make_graph(nodes, "g", [vinfo("x", [1, 4])], [vinfo("y", [1, 4])], value_info=[vinfo("f", [1, 4])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("custom", 1)],
                          functions=[f])
    m.ir_version = 8
    path = save(m, ctx.path("m.onnx"))
    optimize_rewrites(ctx, path, ctx.path("o.onnx"))
    if len(onnx.load(ctx.path("o.onnx")).functions) != 1:
        fail("the function MyRelu was dropped")
    same_results(ctx, path, ctx.path("o.onnx"), [{"x": np.array([[-1, 2, -3, 4]], np.float32)}])


@case
def overridable_initializer_kept(ctx):
    b = numpy_helper.from_array(np.array([[1, 2, 3, 4]], np.float32), "b")
    nodes = [helper.make_node("Relu", ["x"], ["r1"], name="r1"), helper.make_node("Relu", ["r1"], ["r2"], name="r2"),
             helper.make_node("Add", ["r2", "b"], ["y"], name="add")]
    m = model(nodes, [vinfo("x", [1, 4]), vinfo("b", [1, 4])], [vinfo("y", [1, 4])], [b])
    path = save(m, ctx.path("m.onnx"))
    optimize_rewrites(ctx, path, ctx.path("o.onnx"))
    inputs = [i.name for i in onnx.load(ctx.path("o.onnx")).graph.input]
    if "b" not in inputs:
        fail(f"the optimized model's inputs are {inputs}: 'b' is no longer overridable")
    x = np.array([[-1, 2, -3, 4]], np.float32)
    same_results(ctx, path, ctx.path("o.onnx"), [{"x": x}, {"x": x, "b": np.full((1, 4), 7, np.float32)}])


@case
def optimize_numbers_nan_inf_absurd(ctx):
    # NaN passes every comparison-based bound; 1e18 or inf seconds overflowed the deadline (no time limit at all).
    m = small_model(ctx)
    for option, value in (("--timeout", "inf"), ("--timeout", "1e18"), ("--timeout", "nan"), ("--alpha", "nan"),
                          ("--min-gain", "nan"), ("--ilp-timeout", "nan"), ("--ilp-timeout", "inf"),
                          ("--node-growth", "nan"), ("--measure-time", "nan"), ("--measure-time", "1e18"),
                          ("--measure-threshold", "nan")):
        ctx.run("optimize", m, "-o", ctx.path("o.onnx"), option, value, code=2,
                message=r"optimize: error: " + option + r": " + value + r" is (not|below)")
    if os.path.exists(ctx.path("o.onnx")):
        fail("an output was written")
    ctx.run("run", "--model", m, "--test-data", ctx.work, "--rtol", "nan", code=2,
            message=r"run: error: --rtol: nan is below 0")
    ctx.run("optimize", m, "-o", ctx.path("o.onnx"), "-q", "--timeout", "31536000", code=0, message=None)


# ---- output paths ----


def small_model(ctx):
    n = helper.make_node("Relu", ["x"], ["y"], name="r")
    return save(model([n], [vinfo("x", [1, 4])], [vinfo("y", [1, 4])]), ctx.path("m.onnx"))


@case
def optimize_report_is_the_model(ctx):
    m = small_model(ctx)
    before = digest(m)
    ctx.run("optimize", m, "-o", ctx.path("out.onnx"), "--report", m, code=2,
            message=r"optimize: error: --report '.*m\.onnx' is the same file as the model '.*m\.onnx': refusing")
    if digest(m) != before or os.path.exists(ctx.path("out.onnx")):
        fail("the model was changed or an output written")


@case
def optimize_output_is_the_rules_database(ctx):
    m = small_model(ctx)
    db = ctx.path("rules.db")
    shutil.copy(os.path.join(ctx.bin, "..", "default_rules.db"), db)
    before = digest(db)
    ctx.run("optimize", m, "-o", db, "--rules", db, code=2,
            message=r"-o '.*rules\.db' is the same file as the rules database")
    ctx.run("optimize", m, "-o", os.path.join(ctx.bin, "..", "default_rules.db"), code=2,
            message=r"is the same file as the rules database")
    if digest(db) != before:
        fail("the database was changed")


@case
def optimize_report_is_the_output(ctx):
    m = small_model(ctx)
    ctx.run("optimize", m, "-o", ctx.path("o.onnx"), "--report", ctx.path(".", "o.onnx"), code=2,
            message=r"(--report|-o) '.*o\.onnx' is the same file as (-o|--report) '.*o\.onnx': refusing")
    if os.path.exists(ctx.path("o.onnx")):
        fail("an output was written")


@case
def run_export_is_the_model(ctx):
    m = small_model(ctx)
    before = digest(m)
    ctx.run("run", "--model", m, "--inputs", x_input(ctx), "--export", m, code=2,
            message=r"--export '.*m\.onnx' is the same file as --model")
    if digest(m) != before:
        fail("the model was changed")


@case
def optimize_output_fifo_written_in_place(ctx):
    # A FIFO, like a character device (/dev/null), is written in place; the rename of a temporary file once
    # replaced it (as root, /dev/null itself; not tried here, since a regression would replace the machine's).
    import threading
    m = small_model(ctx)
    fifo = ctx.path("out.fifo")
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()), daemon=True)
    reader.start()
    ctx.run("optimize", m, "-o", fifo, "-q", code=0, message=None, timeout=60)
    reader.join(30)
    if not stat.S_ISFIFO(os.lstat(fifo).st_mode):
        fail("the FIFO given as -o was replaced")
    if not got or onnx.load_from_string(got[0]).graph.node[0].op_type != "Relu":
        fail("the FIFO did not receive the model")


@case
def optimize_output_through_symlink(ctx):
    # Whether a rewrite applied (re-export) or not (copy), -o through a link writes the file it names.
    for name, nodes in (("unchanged", [helper.make_node("Relu", ["x"], ["y"], name="r")]),
                        ("rewritten", [helper.make_node("Relu", ["x"], ["r1"], name="r1"),
                                       helper.make_node("Relu", ["r1"], ["y"], name="r2")])):
        m = save(model(nodes, [vinfo("x", [1, 4])], [vinfo("y", [1, 4])]), ctx.path(name + ".onnx"))
        target, link = ctx.path(name + "_target.onnx"), ctx.path(name + "_link.onnx")
        with open(target, "wb") as f:
            f.write(b"old")
        os.symlink(os.path.basename(target), link)
        ctx.run("optimize", m, "-o", link, *relu_rules(ctx), code=0, message=None)
        if not os.path.islink(link) or os.readlink(link) != os.path.basename(target):
            fail(f"{name}: the link -o names was replaced")
        onnx.checker.check_model(onnx.load(target))


@case
def optimize_report_unwritable_writes_no_model(ctx):
    m = small_model(ctx)
    ctx.run("optimize", m, "-o", ctx.path("o.onnx"), "--report", ctx.path("no", "such", "r.json"), code=1,
            message=r"optimize: error: cannot write '.*r\.json': folder '.*such' does not exist")
    ctx.run("optimize", m, "-o", ctx.path("o.onnx"), "--report-html", ctx.work, code=1,
            message=r"optimize: error: cannot write '.*': it is a folder")
    if os.path.exists(ctx.path("o.onnx")):
        fail("-o was written though the report could not be")


@case
def optimize_calibration_dir_holds_the_model(ctx):
    os.makedirs(ctx.path("cal"))
    n = helper.make_node("Relu", ["x"], ["y"], name="r")
    m = save(model([n], [vinfo("x", [1, 4])], [vinfo("y", [1, 4])]), ctx.path("cal", "op0.onnx"))
    before = digest(m)
    ctx.run("optimize", m, "-o", ctx.path("o.onnx"), "--calibration-dir", ctx.path("cal"), code=2,
            message=r"the model '.*op0\.onnx' lies in --calibration-dir '.*cal', where optimize writes op0\.onnx")
    ctx.run("optimize", small_model(ctx), "-o", ctx.path("cal", "signatures.tsv"), "--calibration-dir",
            ctx.path("cal"), code=2, message=r"-o '.*signatures\.tsv' lies in --calibration-dir")
    if digest(m) != before or os.path.exists(ctx.path("o.onnx")):
        fail("the model was changed or an output written")


@case
def verify_smt2_is_the_specs(ctx):
    specs = ctx.path("one.axioms")
    with open(specs, "w") as f:
        f.write("axiom relu_idem  # relu twice\n  vars a: any\n  relu(relu(a)) = relu(a)\n")
    before = digest(specs)
    ctx.run("verify", "--prove", "relu(relu(x0)) => relu(x0)", "--shapes", "x0=2x2", "--specs", specs, "--smt2",
            specs, code=2, message=r"verify: error: --smt2 '.*one\.axioms' is the same file as --specs")
    if digest(specs) != before:
        fail("the specs were overwritten")


@case
def run_export_is_the_expected_output(ctx):
    m = small_model(ctx)
    data = ctx.path("data")
    os.makedirs(data)
    tensor_file(os.path.join(data, "input_0.pb"), np.ones((1, 4), np.float32))
    expected = tensor_file(os.path.join(data, "output_0.pb"), np.ones((1, 4), np.float32), "y")
    before = digest(expected)
    ctx.run("run", "--model", m, "--test-data", data, "--export", expected, code=2,
            message=r"--export '.*output_0\.pb' is the same file as a file of --test-data")
    if digest(expected) != before:
        fail("the expected output was overwritten")


@case
def fifo_as_model_or_database(ctx):
    # A FIFO nobody writes would block the first read forever.
    fifo = ctx.path("p.fifo")
    os.mkfifo(fifo)
    ctx.run("optimize", fifo, "-o", ctx.path("o.onnx"), code=1, timeout=30,
            message=r"optimize: error: '.*p\.fifo': is not a regular file \(a FIFO, device or socket\)")
    ctx.run("run", "--model", fifo, "--inputs", x_input(ctx), code=1, timeout=30,
            message=r"run: error: '.*p\.fifo': is not a regular file")
    ctx.run("rules", "--db", fifo, "stats", code=1, timeout=30,
            message=r"rules: error: '.*p\.fifo' is not a regular file \(a FIFO, device or socket\), not a rules database")
    ctx.run("optimize", small_model(ctx), "-o", ctx.path("o.onnx"), "--rules", fifo, code=1, timeout=30,
            message=r"'.*p\.fifo' is not a regular file")
    ctx.run("verify", "--db", fifo, code=1, timeout=30, message=r"'.*p\.fifo' is not a regular file")
    if os.path.exists(ctx.path("o.onnx")) or os.path.exists(fifo + "-journal"):
        fail("an output or a journal was written")


@case
def rules_import_read_error(ctx):
    # /proc/self/mem opens as a regular file, and its first read fails (EIO): a read error, not an empty file.
    db = ctx.path("r.db")
    ctx.run("rules", "--db", db, "import", "/proc/self/mem", code=1,
            message=r"rules: error: read error in the rule file '/proc/self/mem'")
    ctx.run("rules", "--db", db, "import-costs", "--device", "cpu", "/proc/self/mem", code=1,
            message=r"rules: error: read error in '/proc/self/mem'")
    if os.path.exists(db):
        con = sqlite3.connect(db)
        n = con.execute("SELECT count(*) FROM rules").fetchone()[0]
        con.close()
        if n:
            fail("rules were stored")


@case
def axiom_term_int64_min_divided_by_minus_one(ctx):
    specs = ctx.path("ovf.axioms")
    with open(specs, "w") as f:
        f.write("axiom ovf  # INT64_MIN / -1 overflows (SIGFPE on x86)\n  vars a: any\n"
                "  where (0 - 9223372036854775807 - 1) / (0 - 1) > 0\n  relu(a) = relu(a)\n")
    message = r"axiom 'ovf': '.*' computes a value beyond int64 \(overflow\)"
    ctx.run("verify", "--check-axioms", "--specs", specs, code=1, message=message, timeout=60)


@case
def rules_stats_refused_database_unchanged(ctx):
    # An older schema whose migration fails: refused, and the file byte for byte as it was (no switch to WAL).
    db = fresh_db(ctx)
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode = DELETE")
    latest = int(con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0])
    con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(latest - 1),))
    con.commit()
    con.close()
    before = digest(db)
    ctx.run("rules", "--db", db, "stats", code=1, message=r"rules: error: .*r\.db.*migrating to schema version")
    if digest(db) != before:
        fail("the refused database was changed")
    for suffix in ("-wal", "-shm", "-journal"):
        if os.path.exists(db + suffix):
            fail(f"{db}{suffix} was left")


def under_file_size_limit(ctx, limit, prog, *args):
    """Runs bin/PROG ARGS with a file size limit (ulimit -f): a write beyond it fails (EFBIG), or SIGXFSZ ends it."""
    import resource
    set_limit = lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    p = subprocess.run([os.path.join(ctx.bin, prog), *[str(a) for a in args]], capture_output=True, text=True,
                       timeout=120, preexec_fn=set_limit)
    print(f"{prog} under a {limit}-byte file size limit: exit {p.returncode}: {(p.stdout + p.stderr).strip()[-300:]}")
    return p


@case
def rules_merge_interrupted_leaves_no_output(ctx):
    # Past a file size limit while writing: C does not exist, rather than half of it, and no temporary is left.
    a = fresh_db(ctx, "a.db")
    b = os.path.join(ctx.bin, "..", "default_rules.db")
    out = ctx.path("c.db")
    p = under_file_size_limit(ctx, 40000, "rules", "merge", a, b, "-o", out)
    if p.returncode != 1:
        fail("expected exit 1 (a write error), not a crash or success")
    if os.path.exists(out):
        fail("an interrupted merge left a database under the output's name")
    if [f for f in os.listdir(ctx.work) if f.startswith("c.db")]:
        fail(f"the failed merge left {os.listdir(ctx.work)}")
    ctx.run("rules", "merge", a, b, "-o", out, code=0, message=r"rules from .* written to .*c\.db")
    if [f for f in os.listdir(ctx.work) if f.startswith("c.db") and f != "c.db"]:
        fail("a merge left files beside its output")


@case
def optimize_past_file_size_limit_leaves_no_temporary(ctx):
    w = numpy_helper.from_array(np.ones((1, 4096), np.float32), "w")
    n = helper.make_node("Add", ["x", "w"], ["y"], name="add")
    m = save(model([n], [vinfo("x", [1, 4096])], [vinfo("y", [1, 4096])], [w]), ctx.path("m.onnx"))
    os.makedirs(ctx.path("out"))
    p = under_file_size_limit(ctx, 8192, "optimize", m, "-o", ctx.path("out", "o.onnx"), "-q")
    if p.returncode != 1 or not re.search(r"optimize: error: cannot write '.*o\.onnx'", p.stderr):
        fail("expected exit 1 naming the output")
    if os.listdir(ctx.path("out")):
        fail(f"left in the output's folder: {os.listdir(ctx.path('out'))}")


@case
def recheck_proved_refutes_a_false_rule(ctx):
    db = fresh_db(ctx)
    rules = ctx.path("false.rules")
    with open(rules, "w") as f:
        f.write("relu(x0) => x0 | x0=2x2\n")
    ctx.run("rules", "--db", db, "import", rules, code=0, message=None)
    con = sqlite3.connect(db)
    con.execute("UPDATE rules SET status = 'proved' WHERE canonical = 'relu(x0) => x0'")
    con.commit()
    con.close()
    ctx.run("verify", "--db", db, "--recheck-proved", code=1, message=r"DIFFERS .*1 differ, 1 set to refuted")
    con = sqlite3.connect(db)
    status, counterexample = con.execute(
        "SELECT status, counterexample FROM rules WHERE canonical = 'relu(x0) => x0'").fetchone()
    con.close()
    if status != "refuted" or not counterexample:
        fail(f"the false rule is still {status}")
    ctx.run("verify", "--db", db, "--recheck-proved", code=0, message=r"0 differ")


@case
def initializer_over_max_elements(ctx):
    w = numpy_helper.from_array(np.ones((1000,), np.float32), "w")
    n = helper.make_node("Add", ["x", "w"], ["y"], name="add")
    path = save(model([n], [vinfo("x", [1000])], [vinfo("y", [1000])], [w]), ctx.path("m.onnx"))
    ctx.run("optimize", path, "-o", ctx.path("o.onnx"), "--max-elements", 999, code=1,
            message=r"initializer 'w': a tensor of 1000 elements is larger than the limit of 999 "
                    r"\(raise it with --max-elements\)")
    if os.path.exists(ctx.path("o.onnx")):
        fail("an output was written")
    ctx.run("optimize", path, "-o", ctx.path("o.onnx"), "-q", code=0, message=None)


@case
def input_shape_syntax_is_a_usage_error(ctx):
    m = small_model(ctx)
    for spec, message in (("x", r"expected NAME=DIMS"), ("x=1xq", r"--input-shape 'x=1xq'"),
                          ("x=1x4", r"gives input 'x' twice")):
        extra = ["--input-shape", "x=1x4"] if spec == "x=1x4" else []
        ctx.run("optimize", m, "-o", ctx.path("o.onnx"), "--input-shape", spec, *extra, code=2,
                message=r"optimize: error: .*" + message)


@case
def stdout_full_is_an_error(ctx):
    db = os.path.join(ctx.bin, "..", "default_rules.db")
    with open("/dev/full", "w") as full:
        p = subprocess.run([os.path.join(ctx.bin, "rules"), "--db", db, "stats"], stdout=full,
                           stderr=subprocess.PIPE, text=True, timeout=60)
    if p.returncode != 1 or "rules: error: cannot write to stdout" not in p.stderr:
        fail(f"rules stats > /dev/full: exit {p.returncode}, {p.stderr!r}")
    print(f"ok: rules stats > /dev/full: exit 1: {p.stderr.strip()}")


@case
def report_html_never_runs_dot_of_the_current_folder(ctx):
    m = small_model(ctx)
    marker = ctx.path("ran")
    with open(ctx.path("dot"), "w") as f:
        f.write(f"#!/bin/sh\n/usr/bin/touch {marker} || /bin/touch {marker}\n")
    os.chmod(ctx.path("dot"), 0o755)
    for path in ("", ":", "bin:"):  # empty entries mean the current folder to a shell; relative ones are relative to it
        env = dict(os.environ, PATH=path)
        p = subprocess.run([os.path.join(ctx.bin, "optimize"), m, "-o", ctx.path("o.onnx"), "-q", "--report-html",
                            ctx.path("r.html")], cwd=ctx.work, env=env, capture_output=True, text=True, timeout=120)
        if os.path.exists(marker):
            fail(f"PATH={path!r}: optimize ran ./dot")
        if p.returncode != 1 or "which is not on PATH" not in p.stderr:
            fail(f"PATH={path!r}: exit {p.returncode}: {p.stderr}")
    print("ok: ./dot never ran; 'dot is not on PATH' for PATH '', ':' and 'bin:'")


# ---- rule and axiom text nested deeply ----


def nested(op, depth, leaf="x0"):
    return op + "(" * 1 + (op + "(") * (depth - 1) + leaf + ")" * depth


DEEP = r"nested more than 256 calls deep \(the limit\)"


@case
def verify_prove_nested_20000(ctx):
    ctx.run("verify", "--prove", nested("relu", 20000) + " => relu(x0)", "--shapes", "x0=2x2", code=1, message=DEEP)


@case
def verify_prove_nested_transposes_10000(ctx):
    ctx.run("verify", "--prove", nested("transpose", 10000) + " => x0", "--shapes", "x0=2x3", code=1, message=DEEP,
            timeout=30)


@case
def verify_prove_relu_5000_is_quick(ctx):
    ctx.run("verify", "--prove", nested("relu", 5000) + " => relu(x0)", "--shapes", "x0=2x2", code=1, message=DEEP,
            timeout=10)


@case
def rules_lookup_nested_20000(ctx):
    ctx.run("rules", "--db", os.path.join(ctx.bin, "..", "default_rules.db"), "lookup",
            nested("relu", 20000) + " => relu(x0)", code=2, message=DEEP, timeout=20)


@case
def rules_import_nested_line(ctx):
    rules = ctx.path("deep.rules")
    with open(rules, "w") as f:
        f.write("relu(x0) => relu(x0) | x0=2x2\n" + nested("relu", 20000) + " => x0 | x0=2x2\n")
    db = ctx.path("r.db")
    ctx.run("rules", "--db", db, "import", rules, code=1, message=r"deep\.rules:2: at column .*" + DEEP, timeout=30)
    if os.path.exists(db):
        fail("the database was created")


@case
def check_axioms_nested(ctx):
    specs = ctx.path("deep.axioms")
    with open(specs, "w") as f:
        f.write("axiom deep  # relu nested deeply\n  vars a: any\n  " + nested("relu", 20000, "a") + " = relu(a)\n")
    ctx.run("verify", "--check-axioms", "--specs", specs, code=1, message=DEEP, timeout=30)
    m = small_model(ctx)
    ctx.run("optimize", m, "-o", ctx.path("o.onnx"), "--specs", specs, code=1, message=DEEP, timeout=60)
    if os.path.exists(ctx.path("o.onnx")):
        fail("an output was written")


@case
def axiom_term_chain(ctx):
    specs = ctx.path("chain.axioms")
    with open(specs, "w") as f:
        f.write("axiom chain  # a long sum\n  vars a: any\n  where " + "+".join(["dim(a, 0)"] * 20000) + " > 0\n  relu(a) = relu(a)\n")
    ctx.run("verify", "--check-axioms", "--specs", specs, code=1, message=r"term nested more than 256 levels deep",
            timeout=30)


@case
def text_tensors_over_the_limit(ctx):
    # eye[n=20000] asked verify's evaluation for 3 GB; a variable's shape given on the command line as much.
    limit = r"has more than 268435456 elements \(the limit for rules and expressions\)"
    ctx.run("verify", "--prove", "eye[n=20000]() => eye[n=20000]()", "--shapes", "", code=1,
            message=r"verify: error: .*a tensor of shape 20000x20000 " + limit, timeout=30)
    ctx.run("verify", "--prove", "relu(x0) => relu(x0)", "--shapes", "x0=100000x100000", code=1,
            message=r"variable 'x0' of shape 100000x100000 " + limit, timeout=30)
    ctx.run("run", "--expr", "relu(x0)", "--shapes", "x0=30000x30000", code=1,
            message=r"run: error: .*variable 'x0' of shape 30000x30000 " + limit, timeout=30)


# ---- databases ----


def fresh_db(ctx, name="r.db"):
    db = ctx.path(name)
    rules = ctx.path("one.rules")
    with open(rules, "w") as f:
        f.write("".join(f"relu(relu(x{i})) => relu(x{i}) | x{i}=2x{i + 2}\n" for i in range(1)))
        f.write("matmul(x0, matmul(w0, w1)) => matmul(matmul(x0, w0), w1) | x0=2x4,w0=4x4,w1=4x4\n")
    ctx.run("rules", "--db", db, "import", rules, code=0, message=None)
    return db


@case
def damaged_database_is_refused_untouched(ctx):
    db = fresh_db(ctx)
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode = DELETE")
    con.execute("CREATE TABLE filler (x TEXT)")
    con.executemany("INSERT INTO filler VALUES (?)", [("z" * 500,)] * 200)
    con.commit()
    con.close()
    # Damage a page of the rules table's index that opening never reads.
    con = sqlite3.connect(db)
    root = con.execute("SELECT rootpage FROM sqlite_master WHERE name = 'rules_status'").fetchone()[0]
    con.close()
    with open(db, "r+b") as f:
        f.seek((root - 1) * 4096 + 8)
        f.write(b"\xff" * 64)
    before = digest(db)
    for prog, args in (("verify", ["--db", db]), ("generate", ["--db", db, "--max-ops", "1", "--ops", "relu"])):
        ctx.run(prog, *args, code=1, message=r"error: '.*r\.db' (is damaged|is not a valid SQLite database)")
        if digest(db) != before or (os.path.exists(db + "-wal") and os.path.getsize(db + "-wal")):
            fail(f"{prog} changed the damaged database")


@case
def read_only_folder(ctx):
    folder = ctx.path("ro")
    os.makedirs(folder)
    db = os.path.join(folder, "rules.db")
    shutil.copy(os.path.join(ctx.bin, "..", "default_rules.db"), db)
    m = small_model(ctx)
    os.chmod(db, 0o444)
    os.chmod(folder, 0o555)
    env = None
    prefix = []
    if os.geteuid() == 0:
        # root ignores permission bits: run as nobody, as a user who cannot write here would.
        for p in (ctx.work, os.path.dirname(ctx.work)):
            os.chmod(p, os.stat(p).st_mode | 0o755)
        os.chmod(ctx.work, 0o777)
        prefix = ["--reuid=65534", "--regid=65534", "--clear-groups"]
    try:
        def as_user(prog, *args, **kw):
            if not prefix:
                return ctx.run(prog, *args, **kw)
            cmd = ["setpriv", *prefix, os.path.join(ctx.bin, prog), *[str(a) for a in args]]
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            out = p.stdout + p.stderr
            if p.returncode != kw["code"] or (kw["message"] and not re.search(kw["message"], out, re.S)):
                fail(" ".join(cmd) + f"\n  exit {p.returncode}\n  output: {out[-2000:]}")
            print(f"ok (as nobody): {prog} exit {p.returncode}")
            return out
        as_user("rules", "--db", db, "stats", code=0, message=r"[0-9]+ rules\nby status:\n  proved ")
        as_user("rules", "--db", db, "lookup", "relu(conv2d(i0, k0)) => conv2d[act=relu](i0, k0)", code=0,
                message=r"^1 proved")
        as_user("optimize", m, "-o", ctx.path("o.onnx"), "--rules", db, "--no-default-rules", "-q", code=0,
                message=None)
        shipped = os.path.join(ctx.bin, "..", "default_rules.db")
        as_user("optimize", m, "-o", ctx.path("o2.onnx"), "-q", "--rules", shipped, code=0, message=None)
    finally:
        os.chmod(folder, 0o755)


@case
def read_only_database_with_wal_content(ctx):
    # Committed rules still in a -wal whose -shm is gone, in a read-only folder: immutable=1 would not see them.
    db = fresh_db(ctx)
    rules = ctx.path("late.rules")
    with open(rules, "w") as f:
        f.write("neg(neg(x0)) => x0 | x0=2x2\n")
    holder = sqlite3.connect(db)  # an open connection: the import's close does not checkpoint the -wal away
    holder.execute("SELECT count(*) FROM rules").fetchone()
    ctx.run("rules", "--db", db, "import", rules, code=0, message=None)
    folder = ctx.path("ro")
    os.makedirs(folder)
    copy = os.path.join(folder, "r.db")
    shutil.copy(db, copy)
    shutil.copy(db + "-wal", copy + "-wal")
    holder.close()
    if not os.path.getsize(copy + "-wal"):
        fail("the -wal holds nothing; the test needs committed changes in it")
    before = digest(copy)
    os.chmod(folder, 0o555)
    cmd = [os.path.join(ctx.bin, "rules"), "--db", copy, "lookup", "neg(neg(x0)) => x0"]
    if os.geteuid() == 0:  # root ignores permission bits: run as nobody
        for p in (ctx.work, os.path.dirname(ctx.work)):
            os.chmod(p, os.stat(p).st_mode | 0o755)
        cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] + cmd
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    finally:
        os.chmod(folder, 0o755)
    out = p.stdout + p.stderr
    if p.returncode != 1 or not re.search(r"rules: error: '.*r\.db' has committed changes in '.*r\.db-wal' that "
                                          r"SQLite cannot read here", out):
        fail(f"{' '.join(cmd)}: exit {p.returncode}: {out}")
    if digest(copy) != before:
        fail("the database was changed")
    print(f"ok: exit 1: {out.strip()}")


@case
def stale_run_and_concurrent_generate(ctx):
    db = ctx.path("g.db")
    args = ["--db", db, "--max-ops", "3"]
    first = subprocess.Popen([os.path.join(ctx.bin, "generate"), *args], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    # Wait for its run to be stored, then start a second one with the same settings.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
            running = con.execute("SELECT count(*) FROM runs WHERE status = 'running'").fetchone()[0]
            con.close()
            if running:
                break
        except sqlite3.Error:
            pass
        time.sleep(0.05)
    else:
        fail("the first generate stored no run")
    if first.poll() is not None:
        fail("generate --max-ops 3 ended too soon for this test")
    ctx.run("generate", *args, code=1,
            message=r"generate run 1 is being executed by process %d on .*; wait until it ends" % first.pid)
    ctx.run("verify", "--db", db, code=1, message=r"generate run 1 is being executed by process %d" % first.pid)
    first.kill()
    first.wait()
    # The killed run is marked on the next writable open (here verify's, which then refuses nothing).
    ctx.run("verify", "--db", db, code=0, message=None)
    con = sqlite3.connect(db)
    status, stats = con.execute("SELECT status, stats FROM runs WHERE id = 1").fetchone()
    con.close()
    if status != "failed" or f"process {first.pid} on " not in stats:
        fail(f"run 1 is {status} {stats}, expected failed naming process {first.pid}")
    print(f"ok: run 1 {status}: {stats}")


# ---- messages, stacks and limits (issue 46, second part) ----


def run_bytes(ctx, prog, *args, stack_kb=None, timeout=120):
    """Runs bin/PROG ARGS (under `ulimit -s STACK_KB` when given); returns (exit status, stdout+stderr as bytes)."""
    def limit_stack():
        resource.setrlimit(resource.RLIMIT_STACK, (stack_kb * 1024, stack_kb * 1024))
    cmd = [os.path.join(ctx.bin, prog)] + [str(a) for a in args]
    p = subprocess.run(cmd, capture_output=True, timeout=timeout, preexec_fn=limit_stack if stack_kb else None)
    if p.returncode < 0:
        fail(f"crashed with signal {signal.Signals(-p.returncode).name}"
             f"{f' under ulimit -s {stack_kb}' if stack_kb else ''}: {' '.join(cmd)[:300]}")
    return p.returncode, p.stdout + p.stderr


@case
def messages_cut_no_utf8_character(ctx):
    # "found '...'" quotes the whole character; the excerpt of a long line cuts no character.
    long_line = "add(x0, x0) " + "\u20ac" * 300
    for expr, quoted in (("relu(\u00e9)", "\u00e9"), (long_line, "\u20ac"), ("\u20ac" * 100 + " relu(x0)", "\u20ac")):
        code, out = run_bytes(ctx, "run", "--expr", expr, "--shapes", "x0=2x2")
        try:
            text = out.decode("utf-8")  # strict: a cut character raises
        except UnicodeDecodeError as e:
            fail(f"run --expr {expr[:40]!r}...: the message is not UTF-8 ({e}): {out[-300:]!r}")
        if code != 1 or f"found '{quoted}'" not in text:
            fail(f"run --expr {expr[:40]!r}...: exit {code}, expected exit 1 and found '{quoted}': {text}")
    code, out = run_bytes(ctx, "rules", "--db", os.path.join(ctx.bin, "..", "default_rules.db"), "lookup",
                          "relu(x0) => \u00e9")
    if "found '\u00e9'" not in out.decode("utf-8"):
        fail(f"rules lookup: exit {code}: {out!r}")
    print(f"ok: whole characters quoted, every message valid UTF-8: {text.splitlines()[0][:100]}")


NESTING_LIMIT = 255  # the deepest rule accepted: "nested more than 256 calls deep" counts the leaf's level


@case
def stack_of_128k_rule_at_the_nesting_limit(ctx):
    # ulimit -s 128: the main thread's stack overflowed on rules below the nesting limit (255 deep crashed).
    at_limit, over = nested("relu", NESTING_LIMIT), nested("relu", NESTING_LIMIT + 1)
    db = os.path.join(ctx.bin, "..", "default_rules.db")
    checks = [
        (("run", "--expr", at_limit, "--shapes", "x0=2x2"), 0),
        (("verify", "--prove", at_limit + " => " + at_limit, "--shapes", "x0=2x2"), 0),
        (("verify", "--check", nested("transpose", NESTING_LIMIT) + " => transpose(x0)", "--shapes", "x0=2x3"), 0),
        (("rules", "--db", db, "lookup", at_limit + " => x0"), 1),  # not stored
    ]
    specs = ctx.path("deep.axioms")
    with open(specs, "w") as f:
        f.write("axiom deep  # relu nested at the limit\n  vars a: any\n  " + nested("relu", NESTING_LIMIT, "a") +
                " = relu(a)\n")
    checks.append((("verify", "--check-axioms", "--specs", specs), 0))  # relu is idempotent: it holds
    for args, expected in checks:
        code, out = run_bytes(ctx, *args, stack_kb=128)
        if code != expected:
            fail(f"{args[0]} {args[1]} under ulimit -s 128: exit {code}, expected {expected}: {out[-500:]!r}")
    code, out = run_bytes(ctx, "run", "--expr", over, "--shapes", "x0=2x2", stack_kb=128)
    if code != 1 or b"nested more than 256 calls deep" not in out:
        fail(f"run --expr nested 257 deep: exit {code}: {out[-300:]!r}")
    print(f"ok: {len(checks)} commands on a rule {NESTING_LIMIT} deep under ulimit -s 128, none crashed")


def encode_varint(n):
    out = b""
    while True:
        low, n = n & 0x7F, n >> 7
        if not n:
            return out + bytes([low])
        out += bytes([low | 0x80])


def padded_model(ctx, fields):
    """A Relu model followed by `fields` 2-byte fields (number 15, a varint) that ModelProto does not have."""
    n = helper.make_node("Relu", ["x"], ["y"], name="r")
    path = ctx.path("padded.onnx")
    with open(path, "wb") as f:
        f.write(model([n], [vinfo("x", [1, 4])], [vinfo("y", [1, 4])]).SerializeToString() + b"\x78\x01" * fields)
    return path


@case
def onnx_unknown_fields_are_bounded(ctx):
    # protobuf keeps unknown fields at 8 to 16 times their size (16 MB of them took 160 MB): they count in
    # --max-bytes, checked before parsing; peak memory stays near the file's size.
    path = padded_model(ctx, 8 << 20)  # 16 MB of unknown fields
    x = x_input(ctx)
    peaks = []
    ctx.run("run", "--model", path, "--inputs", x, "--output-dir", ctx.path("out"), "--max-bytes", 100000000, code=1,
            peak=peaks, message=r"run: error: '.*padded\.onnx': 8388608 fields unknown to onnx\.ModelProto and its messages "
                    r"\(protobuf keeps them\) would take 268435456 bytes, more than the limit of 100000000 "
                    r"\(raise it with --max-bytes\)")
    peak_mb = peaks[-1]
    if peak_mb > 80:
        fail(f"run's peak memory was {peak_mb:.0f} MB for a 16 MB model it refused")
    if os.path.exists(ctx.path("out")):
        fail("run wrote outputs though it failed")
    # Known fields too: 8 MB of empty nodes (a NodeProto object each) took 760 MB.
    nodes = ctx.path("nodes.onnx")
    m = model([helper.make_node("Relu", ["x"], ["y"], name="r")], [vinfo("x", [1, 4])], [vinfo("y", [1, 4])])
    g = m.graph.SerializeToString() + b"\x0a\x00" * (4 << 20)  # field 1 (node), empty: 4M nodes
    m.ClearField("graph")
    with open(nodes, "wb") as f:
        f.write(m.SerializeToString() + b"\x3a" + encode_varint(len(g)) + g)  # field 7: the graph
    ctx.run("run", "--model", nodes, "--inputs", x, "--output-dir", ctx.path("out"), "--max-bytes", 100000000, code=1,
            peak=peaks, message=r"'.*nodes\.onnx': parsed, its 419[0-9]{4} messages, their strings, numbers and unknown fields would "
                    r"take [0-9]+ bytes, more than the limit of 100000000")
    peak_mb = max(peaks)
    if peak_mb > 80:
        fail(f"run's peak memory was {peak_mb:.0f} MB for an 8 MB model it refused")
    # A few unknown fields (what a newer ONNX writes) are read as before.
    ctx.run("run", "--model", padded_model(ctx, 8), "--inputs", x, "--output-dir", ctx.path("out"), code=0,
            message=None)
    print(f"ok: refused before parsing, peak {peak_mb:.0f} MB")


@case
def initializer_bytes_count_in_max_bytes(ctx):
    w = numpy_helper.from_array(np.ones((1, 1000), np.int8), "w")  # 1,000 bytes, 8,000 as int64
    n = helper.make_node("Add", ["x", "w"], ["y"], name="add")
    m = model([n], [vinfo("x", [1, 1000], TensorProto.INT8)], [vinfo("y", None)], [w])
    path = save(m, ctx.path("m.onnx"))
    x = tensor_file(ctx.path("x.pb"), np.ones((1, 1000), np.int8))
    ctx.run("run", "--model", path, "--inputs", x, "--output-dir", ctx.path("out"), "--max-bytes", 7999, code=1,
            message=r"initializer 'w': the model's constants would take 8000 bytes, more than the limit of 7999 "
                    r"\(raise it with --max-bytes\)")
    ctx.run("run", "--model", path, "--inputs", x, "--output-dir", ctx.path("out"), "--max-bytes", 8000, code=0,
            message=None)
    # External data: counted before it is read.
    ext = ctx.path("ext")
    os.makedirs(ext)
    big = numpy_helper.from_array(np.ones((1, 1000), np.float32), "w")
    m2 = model([helper.make_node("Add", ["x", "w"], ["y"], name="add")], [vinfo("x", [1, 1000])], [vinfo("y", None)],
               [big])
    onnx.save_model(m2, os.path.join(ext, "m.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="w.bin", size_threshold=0)
    ctx.run("run", "--model", os.path.join(ext, "m.onnx"), "--inputs",
            tensor_file(ctx.path("xf.pb"), np.ones((1, 1000), np.float32)), "--output-dir", ctx.path("out2"),
            "--max-bytes", 3999, code=1,
            message=r"tensor 'w': the model's external data would take 4000 bytes, more than the limit of 3999")
    if os.path.exists(ctx.path("out2")):
        fail("run wrote outputs though it failed")


@case
def text_graph_limits(ctx):
    # run --expr and --graph, verify --prove and --check: --max-elements and --max-bytes, before evaluating.
    ctx.run("run", "--expr", "add(relu(x0), x0)", "--shapes", "x0=10x100", "--max-bytes", 7999, code=1,
            message=r"at column 5: the graph's values would take 8000 bytes, more than the limit of 7999 "
                    r"\(raise it with --max-bytes\)")
    ctx.run("run", "--expr", "relu(x0)", "--shapes", "x0=10x100", "--max-elements", 999, code=1,
            message=r"variable 'x0' of shape 10x100 has more than 999 elements")
    graph = ctx.path("big.tg")
    with open(graph, "w") as f:
        f.write("input x 100000x100000\noutput relu(x)\n")  # was evaluated: 40 GB asked of the interpreter
    ctx.run("run", "--graph", graph, code=1,
            message=r"line 1, column 9: input 'x' of shape 100000x100000 has more than 268435456 elements")
    ctx.run("verify", "--prove", "eye[n=2000]() => eye[n=2000]()", "--shapes", "x0=1", "--max-elements", 1000000,
            code=1, message=r"a tensor of shape 2000x2000 has more than 1000000 elements")
    ctx.run("verify", "--check", "relu(x0) => relu(x0)", "--shapes", "x0=100x100", "--max-bytes", 1000, code=1,
            message=r"the graph's values would take 40000 bytes, more than the limit of 1000")


@case
def generate_space_limits(ctx):
    def space(name, body):
        path = ctx.path(name + ".space")
        with open(path, "w") as f:
            f.write(f"space {name}\nworld w\n" + body)
        return path
    cases = [
        ("variable x 100000x100000 tensor alternative 3x6\noperator relu\n",
         r"huge\.space:3: variable 'x' \(100000x100000\) of 10000000000 elements is larger than the limit of "
         r"268435456 \(raise it with --max-elements\)"),
        ("variable x 2x4 tensor alternative 3x6\noperator ones[shape=100000x100000] -> tensor\n",
         r"huge\.space:4: ones\[shape=100000x100000\] \(100000x100000\) of 10000000000 elements"),
    ]
    for body, message in cases:
        db = ctx.path("g.db")
        ctx.run("generate", "--db", db, "--space", space("huge", body), "--max-ops", 1, code=1,
                message=r"generate: error: .*" + message, timeout=60)
    ctx.run("generate", "--db", ctx.path("g.db"), "--space",
            space("wide", "variable x 1000x1000 tensor alternative 3x6 at-most 3\noperator relu\n"), "--max-ops", 1,
            "--max-bytes", 1000000, code=1,
            message=r"world 'w': the variables' values would take 24000432 bytes, more than the limit of 1000000",
            timeout=60)
    if os.path.exists(ctx.path("g.db")):
        fail("generate created its database though the space was refused")


def main():
    if sys.argv[1:] == ["--list"]:
        print("\n".join(CASES))
        return
    if len(sys.argv) != 4 or sys.argv[3] not in CASES:
        sys.exit("usage: probe.py BIN_DIR WORK_DIR CASE (cases: probe.py --list)")
    if MISSING:
        fail(f"{MISSING}: these tests need the Python packages numpy and onnx (pip install onnx)")
    bin_dir, work, name = sys.argv[1:]
    work = os.path.abspath(os.path.join(work, name))
    if os.path.exists(work):
        for root, dirs, _ in os.walk(work):
            for d in dirs:
                os.chmod(os.path.join(root, d), 0o755)
        shutil.rmtree(work)
    os.makedirs(work)
    CASES[name](Ctx(os.path.abspath(bin_dir), work))


if __name__ == "__main__":
    main()
