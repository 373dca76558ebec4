"""tgr: verified tensor-graph rewriting, from Python.

    import tgr
    optimized, report = tgr.optimize("model.onnx")    # an onnx.ModelProto and the JSON report as a dict
    outputs = tgr.run(optimized, {"x": x})             # the CPU reference interpreter
    db = tgr.RulesDB(tgr.DEFAULT_RULES)                # read-only queries, as the `rules` program
    session = tgr.Session("model.opt.onnx")            # the GPU runtime (session.py): session.run({"x": x})

The work is done by the C++ library the command-line programs use (the
module tgr._tgr, python/bindings.cpp); errors raise tgr.Error with the
message those programs print after "PROGRAM: error: ".
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import onnx
from onnx import numpy_helper

from . import _tgr

Error = _tgr.Error

from .session import Session, TensorSpec, cuda_build, gpu_available  # noqa: E402  (the GPU session)

__all__ = ["Error", "optimize", "run", "RulesDB", "DEFAULT_RULES", "SPECS_DIR", "TARGETS", "Session", "TensorSpec",
           "cuda_build", "gpu_available"]

_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
# The rules shipped with tgr (rules/*.rules, proved when tgr was built): the
# `optimize` program's default.
DEFAULT_RULES = os.path.join(_DATA, "default_rules.db")
# The axioms the instance proofs of `optimize` use (specs/).
SPECS_DIR = os.path.join(_DATA, "specs")

# The cost models `optimize` knows (--cost-model): None is its default.
TARGETS = ("onnxruntime-cpu", "tgr-gpu", "roofline")  # optimize --target (optimizer/target.h)

ModelLike = Union[onnx.ModelProto, str, "os.PathLike[str]"]

# The keyword options of optimize(): the rows of the option table the
# `optimize` program reads too (pipeline/option_table.h), named as its
# options with underscores; their checks are the table's, made by the module.
_OPTIONS = {name: f"{help} ({option})" for name, help, option in _tgr.optimize_options()}


def _check_options(options: Mapping[str, Any]) -> None:
    for key in options:
        if key not in _OPTIONS:
            raise TypeError(f"optimize() got an unexpected keyword argument '{key}' "
                            f"(options: {', '.join(_OPTIONS)})")


def _shapes(input_shapes: Optional[Mapping[str, Sequence[int]]]) -> Dict[str, List[int]]:
    """input_shapes as the module takes them (like --input-shape NAME=DIMS)."""
    if input_shapes is None:
        return {}
    shapes = {}
    for name, dims in input_shapes.items():
        dims = [int(d) for d in dims]
        if any(d < 0 for d in dims):
            raise ValueError(f"input_shapes['{name}'] = {dims}: dimensions must not be negative")
        shapes[str(name)] = dims
    return shapes


def optimize(model: ModelLike, rules: Optional[str] = None, target: Optional[str] = None,
             input_shapes: Optional[Mapping[str, Sequence[int]]] = None,
             **options: Any) -> Tuple[onnx.ModelProto, Dict[str, Any]]:
    """Rewrites `model` with verified rules, as the `optimize` program.

    model: an onnx.ModelProto or the path of an ONNX file.
    rules: a rules database; None: the rules shipped with tgr (DEFAULT_RULES),
      which are also added to a database given here unless no_default_rules=True.
    target: the cost model, one of TARGETS; None: the program's default.
    input_shapes: {input name: dims} for inputs with symbolic dimensions.
    options: the program's options by name (budget=, timeout=, search=, ...; see _OPTIONS).

    Returns (the optimized model, the report): the report is what
    `optimize --report` writes, with "model" the path given (None for a
    ModelProto) and "output" None (nothing is written).
    """
    _check_options(options)
    if target is not None and target not in TARGETS:
        raise ValueError(f"unknown target '{target}': this tgr knows {', '.join(TARGETS)} (or None, the default)")
    shapes = _shapes(input_shapes)
    rules_db = DEFAULT_RULES if rules is None else os.fspath(rules)
    with tempfile.TemporaryDirectory(prefix="tgr-") as tmp:
        if isinstance(model, onnx.ModelProto):
            model_path = os.path.join(tmp, "model.onnx")
            with open(model_path, "wb") as f:
                f.write(model.SerializeToString())
            given_path = None
        else:
            model_path = given_path = os.fspath(model)
        output_path = os.path.join(tmp, "optimized.onnx")
        try:
            report_text = _tgr.optimize_file(model_path, output_path, rules_db, DEFAULT_RULES, SPECS_DIR, shapes,
                                             target or "onnxruntime-cpu", options)
        except Error as e:
            if given_path is not None:
                raise
            # Not the temporary file's name: the caller gave no file.
            raise Error(str(e).replace(f"'{model_path}'", "the model")) from None
        optimized = onnx.load(output_path)
    report = json.loads(report_text)
    report["model"] = given_path
    report["output"] = None
    return optimized, report


def run(model: ModelLike, inputs: Mapping[str, np.ndarray],
        input_shapes: Optional[Mapping[str, Sequence[int]]] = None) -> Dict[str, np.ndarray]:
    """Evaluates `model` on `inputs` ({input name: array}) with tgr's CPU
    reference interpreter (float32), as `run --model`. Returns {output name:
    array}: float32, int64 or bool."""
    tensors = {}
    for name, value in inputs.items():
        tensors[str(name)] = numpy_helper.from_array(np.asarray(value), name=str(name)).SerializeToString()
    if isinstance(model, onnx.ModelProto):
        outputs = _tgr.run_model(None, model.SerializeToString(), tensors, _shapes(input_shapes))
    else:
        outputs = _tgr.run_model(os.fspath(model), None, tensors, _shapes(input_shapes))
    result = {}
    for name, data in outputs:
        tensor = onnx.TensorProto()
        tensor.ParseFromString(data)
        result[name] = numpy_helper.to_array(tensor)
    return result


class RulesDB:
    """A rules database, read-only: the queries of the `rules` program.

    Rules are dicts of every column (as `rules list --format json`): id,
    canonical, source, target, variables, status, kind, proof_ms, ...
    """

    def __init__(self, path: Union[str, "os.PathLike[str]"] = DEFAULT_RULES):
        self._db = _tgr.RulesDbView(os.fspath(path))

    @property
    def path(self) -> str:
        return self._db.path

    def stats(self) -> Dict[str, Any]:
        """`rules stats`: {"rules": N, "by_status": {status: N}, "by_kind": {kind: N},
        "by_size": {(source ops, target ops): N}, "runs": [...], "path", "schema_version"}."""
        return self._db.stats()

    def rules(self, status: Optional[str] = None) -> List[Dict[str, Any]]:
        """`rules list [--status S]`: every rule (of that status), by id."""
        return json.loads(self._db.rules_json(status))

    def rule(self, rule_id: int) -> Optional[Dict[str, Any]]:
        """`rules show ID`: the rule with that id, or None."""
        text = self._db.rule_json(int(rule_id))
        return json.loads(text) if text else None

    def lookup(self, text: str) -> Optional[Dict[str, Any]]:
        """`rules lookup TEXT`: the rule whose canonical form is that of
        "SRC => DST" (any spelling), or None. Raises tgr.Error on a text
        that does not parse."""
        found = self._db.lookup_json(text)
        return json.loads(found) if found else None

    def status(self, text: str) -> Optional[str]:
        """The status of the rule "SRC => DST" ("proved", "refuted", ...), or None when absent."""
        rule = self.lookup(text)
        return rule["status"] if rule else None

    def __len__(self) -> int:
        return self.stats()["rules"]

    def __repr__(self) -> str:
        return f"RulesDB({self.path!r})"
