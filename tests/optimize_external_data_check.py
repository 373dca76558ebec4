"""`optimize` on a model whose weights are external data, when no rule pays.

The model is then written unchanged: copied byte for byte when the output
lies in the model's own folder (the copy finds the weight files there), and
re-exported with the weights inside when it lies elsewhere (a copy there
would not load). Both outputs must compute the reference outputs (`run
--test-data`), and the re-exported one must not name any external file.

usage: optimize_external_data_check.py OPTIMIZE RUN CASE_DIR WORKDIR
"""
import filecmp
import os
import shutil
import subprocess
import sys

import onnx


def main():
    optimize, run, case_dir, workdir = sys.argv[1:5]
    shutil.rmtree(workdir, ignore_errors=True)
    source = os.path.join(workdir, "source")
    shutil.copytree(case_dir, source)
    model = os.path.join(source, "model.onnx")
    test_data = os.path.join(source, "test_data_set_0")
    assert any(t.data_location == onnx.TensorProto.EXTERNAL for t in onnx.load(model, load_external_data=False).graph.initializer)

    beside = os.path.join(source, "optimized.onnx")
    out = subprocess.run([optimize, model, "-o", beside], check=True, capture_output=True, text=True).stdout
    assert "written unchanged" in out, out
    assert filecmp.cmp(model, beside, shallow=False), "the model beside its weights is not a byte copy"

    elsewhere_dir = os.path.join(workdir, "elsewhere")
    os.makedirs(elsewhere_dir)
    elsewhere = os.path.join(elsewhere_dir, "optimized.onnx")
    subprocess.run([optimize, model, "-o", elsewhere], check=True, capture_output=True, text=True)
    written = onnx.load(elsewhere, load_external_data=False)
    external = [t.name for t in written.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]
    assert not external, f"re-exported model still names external data: {external}"
    onnx.checker.check_model(written, full_check=True)

    for path in (beside, elsewhere):
        subprocess.run([run, "--model", path, "--test-data", test_data], check=True, capture_output=True, text=True)
    print("copied beside its weights; re-exported elsewhere; both compute the reference outputs")


if __name__ == "__main__":
    main()
