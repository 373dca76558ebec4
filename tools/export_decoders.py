#!/usr/bin/env python3
"""Export small decoders of today's families to ONNX, with ONNX Runtime's outputs.

Llama-, Qwen2-, Gemma- and Mistral-style causal language models from
transformers' configurations (random weights: nothing is downloaded), at a
small size (2 layers, hidden 64, 4 heads, 2 key/value heads, vocabulary 128,
sequence 16), exported by torch.onnx.export's legacy (TorchScript) exporter.
They hold what these families export to: rotary embeddings (Cos, Sin, Neg,
Slice, Concat), grouped-query attention's key/value expansion (Expand,
Reshape), RMS norm (Pow, ReduceMean, Sqrt, Reciprocal or Div), gated MLPs
(SiLU as Sigmoid and Mul; Gemma's tanh GELU) and the causal mask chains.

Two are exported by the dynamo (torch.export) exporter as well, with the
attention mask and the positions graph inputs. For each NAME it writes NAME.onnx
and NAME-testdata/ holding input_K.pb (the token ids; then the mask and the
positions where they are inputs) and output_0.pb (the logits, computed by ONNX Runtime on the CPU),
the layout of the other models under tests/data/models (`run --model
NAME.onnx --test-data NAME-testdata` compares against it).

usage: python3 tools/export_decoders.py OUTDIR [NAME ...]   (no NAME: all below)
       python3 tools/export_decoders.py --sweep OUTDIR       (40 variants: opsets 17 to 20,
                                                              both exporters, with and without inputs
                                                              for the mask and positions)
Needs torch, transformers, onnx, onnxruntime (and onnxscript for the dynamo exporter).
"""
import os
import sys

import numpy as np
import onnxruntime as ort
import onnx
import torch
from onnx import numpy_helper

VOCAB, SEQ = 128, 16
SMALL = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)


class Logits(torch.nn.Module):
    """The causal LM's logits for token ids, without a key/value cache.

    Without a mask input the attention mask (all ones) is made here: without
    any, transformers 5 looks for packed sequences with torch.diff, which the
    legacy exporter cannot export."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, input_ids, attention_mask=None, position_ids=None):
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        return self.m(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                      use_cache=False).logits


def llama():
    from transformers import LlamaConfig, LlamaForCausalLM
    return LlamaForCausalLM(LlamaConfig(**SMALL))


def qwen2():  # biases on the q/k/v projections
    from transformers import Qwen2Config, Qwen2ForCausalLM
    return Qwen2ForCausalLM(Qwen2Config(**SMALL))


def gemma():  # head_dim given apart from hidden/heads, tanh GELU gate, scaled embeddings, (1 + w) RMS norm
    from transformers import GemmaConfig, GemmaForCausalLM
    return GemmaForCausalLM(GemmaConfig(**SMALL, head_dim=16))


def mistral():  # sliding-window attention (the window is longer than the sequence)
    from transformers import MistralConfig, MistralForCausalLM
    return MistralForCausalLM(MistralConfig(**SMALL, sliding_window=32))


# name: (model builder, opset, exporter, whether attention_mask and position_ids are inputs)
MODELS = {
    "llama_tiny": (llama, 17, "legacy", False),
    "qwen2_tiny": (qwen2, 17, "legacy", False),
    "gemma_tiny": (gemma, 17, "legacy", False),
    "mistral_tiny": (mistral, 17, "legacy", False),
    "llama_tiny_op20": (llama, 20, "legacy", False),
    # The dynamo (torch.export) exporter, with the padding mask and the
    # positions graph inputs (as generation exports them): the rotary
    # embedding's Cos and Sin then run in the graph instead of folding away.
    "llama_tiny_dynamo": (llama, 18, "dynamo", True),
    "gemma_tiny_dynamo": (gemma, 18, "dynamo", True),
}


FAMILIES = {"llama": llama, "qwen2": qwen2, "gemma": gemma, "mistral": mistral}


def sweep_variants():
    """Every family by the legacy exporter at opsets 17 to 20, without and with
    the mask and positions as inputs, and by the dynamo exporter at 18 and 20
    (not bundled: `--sweep OUTDIR` writes them for a check by hand)."""
    variants = {}
    for family, build in FAMILIES.items():
        for opset in (17, 18, 19, 20):
            variants[f"{family}_legacy{opset}"] = (build, opset, "legacy", False)
            variants[f"{family}_legacy{opset}_inputs"] = (build, opset, "legacy", True)
        for opset in (18, 20):
            variants[f"{family}_dynamo{opset}"] = (build, opset, "dynamo", True)
    return variants


def write_tensor(path, array, name):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(array, name).SerializeToString())


def strip_node_metadata(path):
    """Drops the dynamo exporter's per-node metadata (source stack traces naming this machine's paths)."""
    m = onnx.load(path)
    for n in m.graph.node:
        del n.metadata_props[:]
        n.doc_string = ""
    onnx.save(m, path)


def export(name, outdir):
    build, opset, exporter, mask_and_positions = MODELS[name]
    torch.manual_seed(0)
    model = Logits(build()).eval()
    ids = torch.randint(0, VOCAB, (1, SEQ), generator=torch.Generator().manual_seed(1234))
    args, names = (ids,), ["input_ids"]
    if mask_and_positions:  # the last 3 positions padding (right padding: no query row is fully masked)
        mask = torch.ones_like(ids)
        mask[0, -3:] = 0
        positions = torch.arange(SEQ).unsqueeze(0)
        args, names = (ids, mask, positions), ["input_ids", "attention_mask", "position_ids"]
    path = os.path.join(outdir, name + ".onnx")
    with torch.no_grad():
        if exporter == "dynamo":
            torch.onnx.export(model, args, path, input_names=names, output_names=["logits"], opset_version=opset,
                              dynamo=True, external_data=False)
            strip_node_metadata(path)
        else:
            torch.onnx.export(model, args, path, input_names=names, output_names=["logits"], opset_version=opset,
                              dynamo=False, do_constant_folding=True)
        torch_logits = model(*args).numpy()
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = {n: a.numpy().astype(np.int64) for n, a in zip(names, args)}
    (logits,) = sess.run(None, feeds)
    err = float(np.abs(logits - torch_logits).max())
    if err > 1e-4:
        sys.exit(f"{name}: ONNX Runtime differs from PyTorch by {err}")
    tdir = os.path.join(outdir, name + "-testdata")
    os.makedirs(tdir, exist_ok=True)
    for k, n in enumerate(names):
        write_tensor(os.path.join(tdir, f"input_{k}.pb"), feeds[n], n)
    write_tensor(os.path.join(tdir, "output_0.pb"), logits, "logits")
    print(f"{name}: {exporter} exporter, opset {opset}, {os.path.getsize(path) / 1e3:.0f} kB, "
          f"logits {logits.shape}, ONNX Runtime vs PyTorch max abs {err:.1e}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    if sys.argv[1] == "--sweep":
        if len(sys.argv) != 3:
            sys.exit(__doc__)
        MODELS.clear()
        MODELS.update(sweep_variants())
        del sys.argv[1]
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    for name in sys.argv[2:] or MODELS:
        if name not in MODELS:
            sys.exit(f"unknown model '{name}' (known: {', '.join(MODELS)})")
        export(name, outdir)
