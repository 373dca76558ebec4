#!/usr/bin/env python3
"""Checks of tools/taso_rules.py: its wire-format reader against the
protobuf package on TASO's file, and conversions of small rules written
here (an operator tgr lacks, a fused sigmoid, a transpose and a scale).

    python3 tests/taso_rules_check.py tests/data/taso/graph_subst.pb spaces/taso.space

Prints one line per check and `all passed`; exit 1 at the first failure.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import taso_rules  # noqa: E402

OP = {name: i for i, name in enumerate(taso_rules.TASO_OP_TYPES)}
PM = {name: i for i, name in enumerate(taso_rules.TASO_PARAMS)}


def varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        out.append((v & 0x7F) | (0x80 if v > 0x7F else 0))
        v >>= 7
        if not v:
            return bytes(out)


def field(number, value):
    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    return varint(number << 3 | 2) + varint(len(value)) + value


def operator(type_name, inputs, params=()):
    body = field(1, OP[type_name])
    for op, ts in inputs:
        body += field(2, field(1, op) + field(2, ts))
    for key, value in params:
        body += field(3, field(1, PM[key]) + field(2, value))
    return body


def rule(src, dst, outputs):
    body = b"".join(field(1, o) for o in src) + b"".join(field(2, o) for o in dst)
    for s, d in outputs:
        body += field(3, field(1, s) + field(2, d) + field(3, 0) + field(4, 0))
    return field(1, body)


def protobuf_decoding(data):
    """The rules as the protobuf package reads them, from rules.proto's messages built here."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    f = descriptor_pb2.FileDescriptorProto(name="rules.proto", package="GraphSubst", syntax="proto2")
    int32, msg = descriptor_pb2.FieldDescriptorProto.TYPE_INT32, descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE
    req, rep = descriptor_pb2.FieldDescriptorProto.LABEL_REQUIRED, descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED
    shapes = {"Parameter": [("key", int32, req, None), ("value", int32, req, None)],
              "Tensor": [("opId", int32, req, None), ("tsId", int32, req, None)],
              "Operator": [("type", int32, req, None), ("input", msg, rep, "Tensor"), ("para", msg, rep, "Parameter")],
              "MapOutput": [(n, int32, req, None) for n in ("srcOpId", "dstOpId", "srcTsId", "dstTsId")],
              "Rule": [("srcOp", msg, rep, "Operator"), ("dstOp", msg, rep, "Operator"),
                       ("mappedOutput", msg, rep, "MapOutput")],
              "RuleCollection": [("rule", msg, rep, "Rule")]}
    for name, fields in shapes.items():
        m = f.message_type.add(name=name)
        for number, (fname, ftype, label, sub) in enumerate(fields, 1):
            fd = m.field.add(name=fname, number=number, type=ftype, label=label)
            if sub:
                fd.type_name = ".GraphSubst." + sub
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    collection = message_factory.GetMessageClass(pool.FindMessageTypeByName("GraphSubst.RuleCollection"))()
    collection.ParseFromString(data)

    def ops(side):
        return [{"type": o.type, "input": [{"op": t.opId, "ts": t.tsId} for t in o.input],
                 "para": {p.key: p.value for p in o.para}} for o in side]
    return [{"src": ops(r.srcOp), "dst": ops(r.dstOp),
             "outputs": [(m.srcOpId, m.dstOpId, m.srcTsId, m.dstTsId) for m in r.mappedOutput]}
            for r in collection.rule]


def check(what, got, want):
    if got != want:
        print(f"FAILED {what}:\n  got  {got!r}\n  want {want!r}")
        sys.exit(1)
    print(f"ok {what}")


def main():
    pb, space = sys.argv[1], sys.argv[2]
    taso_rules.rule_text.kinds = taso_rules.read_kinds(space)
    with open(pb, "rb") as f:
        data = f.read()
    mine = taso_rules.read_rules(data)
    check("133 rules read", len(mine), 133)
    check("the wire-format reader agrees with the protobuf package", mine, protobuf_decoding(data))
    conv = [("PM_STRIDE_H", 1), ("PM_STRIDE_W", 1), ("PM_PAD", 1), ("PM_ACTI", 1)]
    cases = [
        ("an operator tgr lacks", rule([operator("OP_POOL2D_MAX", [(-1, 0)])], [operator("OP_RELU", [(-1, 0)])],
                                       [(0, 0)]),
         "# taso 0: inexpressible: TASO operator OP_POOL2D_MAX has no counterpart in tgr's operator table"),
        ("a fused sigmoid", rule([operator("OP_CONV2D", [(-1, 0), (-2, 0)], conv)],
                                 [operator("OP_CONV2D", [(-1, 0), (-2, 0)], conv)], [(0, 0)]),
         "# taso 0: inexpressible: OP_CONV2D with PM_ACTI=sigmoid (conv2d fuses relu only)"),
        ("a transpose of a product and a scale",
         rule([operator("OP_MATMUL", [(-1, 0), (-4, 0)], [("PM_ACTI", 0)]),
               operator("OP_TRANSPOSE", [(0, 0)], [("PM_NUMDIM", 2), ("PM_PERM", 2), ("PM_OUTSHUFFLE", 0)]),
               operator("OP_MUL", [(1, 0), (-7, 0)])],
              [operator("OP_MUL", [(-1, 0), (-7, 0)]),
               operator("OP_TRANSPOSE", [(-4, 0)], [("PM_NUMDIM", 2), ("PM_PERM", 2), ("PM_OUTSHUFFLE", 0)]),
               operator("OP_TRANSPOSE", [(0, 0)], [("PM_NUMDIM", 2), ("PM_PERM", 2), ("PM_OUTSHUFFLE", 0)]),
               operator("OP_MATMUL", [(1, 0), (2, 0)], [("PM_ACTI", 0)])], [(2, 3)]),
         "# taso 0\nscalar_mul(transpose(matmul(x0, w0)), s0) => matmul(transpose(w0), transpose(scalar_mul(x0, s0)))"
         " | x0=2x4,w0=4x4,s0=scalar"),
    ]
    for what, data, want in cases:
        text = taso_rules.convert(taso_rules.read_rules(data), [])
        check(what, text.split("\n# 1 TASO rules")[0], want)
    print("all passed")


if __name__ == "__main__":
    main()
