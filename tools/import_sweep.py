#!/usr/bin/env python3
"""Import sweep: export models with PyTorch's two ONNX exporters at several
opsets, compute reference outputs with ONNX Runtime on random inputs, then
check that tgr imports and runs each (`run --test-data`), and print a table
model x exporter x opset -> ok / the first line of the error.

Models: every torchvision classification model
(torchvision.models.list_models(module=torchvision.models), random weights,
batch 1, 224 x 224 except inception_v3 at 299) and Hugging Face encoders and
decoders at small configurations (random weights). Exporters: `legacy`
(torch.onnx.export(dynamo=False)) and `dynamo` (dynamo=True, onnxscript).

Each case lives in OUT/<model>.<exporter>.op<opset>/ (model.onnx, its external
data if any, test_data/ with input_K.pb and output_K.pb); an existing
model.onnx with its test data is not exported again. Export and ONNX
Runtime run in this process (an exception is that case's error), or with
--isolate in a child process per case (a crash or a hang there too, with a
time limit; slower: each child imports torch again); `run` always runs as a
child with a time limit. Results go to OUT/results.json, so that a
sweep can be resumed (`--rerun-failed` runs the failed cases again,
`--rerun` all of them).

usage:
  nice python3 tools/import_sweep.py --out build/import_sweep --models hf --exporters legacy,dynamo --opsets 13,18
  nice python3 tools/import_sweep.py --out build/import_sweep --models torchvision --exporters legacy --opsets 18
  python3 tools/import_sweep.py --out build/import_sweep --table       # the table of what has been run
  python3 tools/import_sweep.py --out DIR1,DIR2 --table                # several sweeps' results in one table
Options: --models takes `torchvision`, `hf`, `all` or a comma-separated list of names.
Requires torch, torchvision, transformers, onnx, onnxruntime, onnxscript (for dynamo).
"""

import argparse
import json
import os
import subprocess
import sys
import time

HF_MODELS = ["bert", "distilbert", "roberta", "gpt2", "hf_vit", "t5_encoder"]


def torchvision_models(out):
    """The classification models, smallest (parameters) first, so that a
    sweep cut short has covered the most models (kept in OUT/torchvision_models.json)."""
    cache = os.path.join(out, "torchvision_models.json")
    if os.path.exists(cache):
        with open(cache) as f:
            return json.load(f)
    import torch
    import torchvision
    names = torchvision.models.list_models(module=torchvision.models)
    params = {}
    for name in names:
        try:
            with torch.device("meta"):  # shapes only: no memory, no initialisation
                model = torchvision.models.get_model(name, weights=None)
        except NotImplementedError:  # an initialisation that copies data (inception_v3)
            model = torchvision.models.get_model(name, weights=None)
        params[name] = sum(p.numel() for p in model.parameters())
    names = sorted(names, key=lambda n: (params[n], n))
    os.makedirs(out, exist_ok=True)
    with open(cache, "w") as f:
        json.dump(names, f)
    return names


# --- the child: build, export, reference outputs ---------------------------------------

class LastHidden:
    """Wraps a Hugging Face model so that it returns last_hidden_state only."""

    @staticmethod
    def wrap(m):
        import torch

        class Wrapped(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.m = m

            def forward(self, x):
                return self.m(x).last_hidden_state

        return Wrapped()


def build_hf(name, attention):
    import torch
    import transformers as tf
    vocab, seq = 1000, 32
    config_class = {"bert": tf.BertConfig, "distilbert": tf.DistilBertConfig, "roberta": tf.RobertaConfig,
                    "gpt2": tf.GPT2Config, "hf_vit": tf.ViTConfig, "t5_encoder": tf.T5Config}[name]

    def config(**kw):
        cfg = config_class(**kw)
        cfg._attn_implementation = attention
        return cfg

    ids = (torch.randint(0, vocab, (1, seq)),)
    if name == "bert":
        cfg = config(vocab_size=vocab, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                            intermediate_size=128)
        return LastHidden.wrap(tf.BertModel(cfg)), ids
    if name == "distilbert":
        cfg = config(vocab_size=vocab, dim=64, n_layers=2, n_heads=2, hidden_dim=128)
        return LastHidden.wrap(tf.DistilBertModel(cfg)), ids
    if name == "roberta":
        cfg = config(vocab_size=vocab, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                               intermediate_size=128, max_position_embeddings=64)
        return LastHidden.wrap(tf.RobertaModel(cfg)), ids
    if name == "gpt2":
        cfg = config(vocab_size=vocab, n_positions=128, n_embd=64, n_layer=2, n_head=2)
        return LastHidden.wrap(tf.GPT2Model(cfg)), ids
    if name == "hf_vit":
        cfg = config(image_size=32, patch_size=8, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                           intermediate_size=128)
        return LastHidden.wrap(tf.ViTModel(cfg)), (torch.randn(1, 3, 32, 32),)
    if name == "t5_encoder":
        cfg = config(vocab_size=vocab, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4)
        return LastHidden.wrap(tf.T5EncoderModel(cfg)), ids
    raise KeyError(name)


def build_model(name, exporter, opset):
    import torch
    import torchvision
    if name in HF_MODELS:
        # The legacy exporter writes scaled_dot_product_attention from opset
        # 14 on; below, the models' own (eager) attention is exported, as
        # one must do to export them at opset 13.
        return build_hf(name, "eager" if exporter == "legacy" and opset < 14 else "sdpa")
    kwargs = {}
    size = 224
    if name == "inception_v3":
        kwargs = dict(init_weights=True, aux_logits=True)
        size = 299
    elif name == "googlenet":
        kwargs = dict(init_weights=True, aux_logits=False)
    model = torchvision.models.get_model(name, weights=None, **kwargs)
    # A weight initialised to zeros (the ViTs' classification head) would
    # make every output equal to the bias: random, so that outputs say something.
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() >= 2 and not p.any():
                torch.nn.init.normal_(p, std=0.02)
    return model, (torch.randn(1, 3, size, size),)


def export_case(name, exporter, opset, case_dir):
    """Exports one case and writes test_data/ with ONNX Runtime's outputs."""
    import numpy as np
    import onnxruntime as ort
    import torch
    from onnx import numpy_helper
    torch.manual_seed(0)
    model, args = build_model(name, exporter, opset)
    model.eval()
    path = os.path.join(case_dir, "model.onnx")
    # Not under torch.no_grad(): there nn.MultiheadAttention takes its fast
    # path (aten::_native_multi_head_attention), which the legacy exporter
    # refuses at opset 13.
    if exporter == "legacy":
        torch.onnx.export(model, args, path, opset_version=opset, dynamo=False, do_constant_folding=True)
    else:
        torch.onnx.export(model, args, path, opset_version=opset, dynamo=True, external_data=True)
    import onnx
    declared = onnx.load(path, load_external_data=False).opset_import
    got = {o.domain: o.version for o in declared}.get("", None)
    if got != opset:
        print(f"note: asked for opset {opset}, the exporter wrote {got}", flush=True)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(1234)
    feeds = {}
    for i, arg in zip(sess.get_inputs(), args):
        a = arg.numpy()
        feeds[i.name] = (rng.integers(0, 1000, size=a.shape).astype(np.int64) if "int" in i.type
                         else rng.standard_normal(a.shape).astype(np.float32))
    outs = sess.run(None, feeds)
    tdir = os.path.join(case_dir, "test_data")
    os.makedirs(tdir, exist_ok=True)
    for k, (n, v) in enumerate(feeds.items()):
        with open(os.path.join(tdir, f"input_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(v, n).SerializeToString())
    for k, (o, v) in enumerate(zip(sess.get_outputs(), outs)):
        with open(os.path.join(tdir, f"output_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(v, o.name).SerializeToString())
    with open(os.path.join(case_dir, "exported"), "w") as f:
        f.write(f"opset {got}\n")


# --- the parent: run the cases, keep the results --------------------------------------

def last_error_line(text):
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in reversed(lines):
        if "error" in ln.lower() or "Error" in ln:
            return ln
    return lines[-1] if lines else "(no output)"


def run_case(args, name, exporter, opset):
    case_dir = os.path.join(args.out, f"{name}.{exporter}.op{opset}")
    os.makedirs(case_dir, exist_ok=True)
    t0 = time.time()
    if not os.path.exists(os.path.join(case_dir, "exported")) and args.isolate:
        cmd = [sys.executable, os.path.abspath(__file__), "--export-one", name, exporter, str(opset), case_dir]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.export_timeout)
        except subprocess.TimeoutExpired:
            return {"status": "export", "message": f"export timed out after {args.export_timeout} s"}
        if p.returncode != 0:
            return {"status": "export", "message": last_error_line(p.stderr + p.stdout)}
    elif not os.path.exists(os.path.join(case_dir, "exported")):
        try:
            export_case(name, exporter, opset, case_dir)
        except Exception as e:  # the exporter's (or ONNX Runtime's) error is this case's result
            lines = [ln for ln in str(e).splitlines() if ln.strip()]
            return {"status": "export", "message": f"{type(e).__name__}: {lines[0] if lines else ''}"}
        finally:
            import gc
            gc.collect()
    t_export = time.time() - t0
    if args.export_only:
        return None
    cmd = [args.run, "--model", os.path.join(case_dir, "model.onnx"), "--test-data", os.path.join(case_dir, "test_data"),
           "--rtol", str(args.rtol)]
    t1 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.run_timeout)
    except subprocess.TimeoutExpired:
        return {"status": "run", "message": f"run timed out after {args.run_timeout} s"}
    out = p.stdout + p.stderr
    result = {"export_s": round(t_export, 1), "run_s": round(time.time() - t1, 1)}
    errors = [ln for ln in out.splitlines() if "relative L2 error" in ln]
    if errors:
        result["errors"] = [" ".join(e.split()) for e in errors]
    with open(os.path.join(case_dir, "exported")) as f:
        result["written_opset"] = int(f.read().split()[1])
    if p.returncode == 0:
        result.update(status="ok", message="ok")
    elif "FAIL" in out and errors:
        result.update(status="accuracy", message="; ".join(e for e in result["errors"] if not e.endswith(" ok")))
    else:
        message = last_error_line(out)
        result.update(status="run", message=message[len("run: error: "):] if message.startswith("run: error: ") else message)
    return result


def load_results(path):
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    return {}


def print_table(results, out=sys.stdout):
    """model | exporter opset ... with ok or the error, then the counts."""
    combos = sorted({(k.split("|")[1], int(k.split("|")[2])) for k in results})
    models = sorted({k.split("|")[0] for k in results})
    head = ["model"] + [f"{e} op{o}" for e, o in combos]
    print("| " + " | ".join(head) + " |", file=out)
    print("|" + " --- |" * len(head), file=out)
    for m in models:
        row = [m]
        for e, o in combos:
            r = results.get(f"{m}|{e}|{o}")
            cell = "" if r is None else ("ok" if r["status"] == "ok" else f"{r['status']}: {r['message']}")
            if r is not None and r.get("written_opset", o) != o:
                cell += f" (opset {r['written_opset']} written)"
            row.append(cell)
        print("| " + " | ".join(c.replace("|", "/") for c in row) + " |", file=out)
    counts = {}
    for r in results.values():
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    print("\n" + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())) + f" ({len(results)} cases)", file=out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="build/import_sweep")
    ap.add_argument("--models", default="hf")
    ap.add_argument("--exporters", default="legacy,dynamo")
    ap.add_argument("--opsets", default="13,18")
    ap.add_argument("--run", default="build/bin/run")
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--export-timeout", type=int, default=1800)
    ap.add_argument("--run-timeout", type=int, default=1800)
    ap.add_argument("--rerun", action="store_true", help="run cases that have a result again")
    ap.add_argument("--rerun-failed", action="store_true", help="run failed cases again")
    ap.add_argument("--isolate", action="store_true",
                    help="export each case in a child process (with --export-timeout), not in this one")
    ap.add_argument("--export-only", action="store_true", help="export (and keep export failures) without running")
    ap.add_argument("--table", action="store_true", help="print the table of OUT/results.json and exit")
    ap.add_argument("--export-one", nargs=4, metavar=("MODEL", "EXPORTER", "OPSET", "DIR"), help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.export_one:
        name, exporter, opset, case_dir = args.export_one
        export_case(name, exporter, int(opset), case_dir)
        return 0

    if args.table:  # --out may name several sweeps (comma-separated); later ones win
        merged = {}
        for out in args.out.split(","):
            merged.update(load_results(os.path.join(out, "results.json")))
        print_table(merged)
        return 0
    results_path = os.path.join(args.out, "results.json")
    results = load_results(results_path)
    if args.models == "torchvision":
        models = torchvision_models(args.out)
    elif args.models == "hf":
        models = HF_MODELS
    elif args.models == "all":
        models = HF_MODELS + torchvision_models(args.out)
    else:
        models = args.models.split(",")
    os.makedirs(args.out, exist_ok=True)
    for name in models:
        for exporter in args.exporters.split(","):
            for opset in (int(o) for o in args.opsets.split(",")):
                key = f"{name}|{exporter}|{opset}"
                old = results.get(key)
                if old and not args.rerun and not (args.rerun_failed and old["status"] != "ok"):
                    continue
                r = run_case(args, name, exporter, opset)
                if r is None:
                    print(f"{name:28} {exporter:6} op{opset}: exported", flush=True)
                    continue
                results[key] = r
                print(f"{name:28} {exporter:6} op{opset}: {r['status']:8} {r['message'][:160]}"
                      f" (export {r.get('export_s', '-')} s, run {r.get('run_s', '-')} s)", flush=True)
                with open(results_path + ".tmp", "w") as f:
                    json.dump(results, f, indent=1, sort_keys=True)
                os.replace(results_path + ".tmp", results_path)
    print_table({k: v for k, v in results.items() if k.split("|")[0] in models})
    return 0


if __name__ == "__main__":
    sys.exit(main())
