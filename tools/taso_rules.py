#!/usr/bin/env python3
"""Converts TASO's published rule collection to tgr's rule text.

    python3 tools/taso_rules.py graph_subst.pb [--space spaces/taso.space] [-o OUT.rules]

Input: TASO's `graph_subst.pb`, a protobuf `GraphSubst.RuleCollection`
(TASO's src/core/rules.proto): rules of source and target operators, an
operator's inputs being rule inputs (negative operator ids) or outputs of
earlier operators of its side, and the source outputs each mapped to a
target output. Operator types and parameter keys are the enums of TASO's
include/taso/ops.h (OpType, PMParameter, ActiMode, PaddingMode).

Output (docs/rule-syntax.md): per TASO rule, a comment line `# taso N` and
the rule `SRC => DST | SHAPES`, or `# taso N: inexpressible: REASON`
naming the operator or parameter tgr's table lacks; the file ends with the
count of inexpressible rules by reason.

TASO's rules hold at every shape where their operators apply; a tgr rule
is text at one shape instance. Each rule variable gets a kind of the space
(`variable` lines: letter, shape, role), tried in the space's order, the
first assignment under which both sides type-check and agree in shape
winning: a variable convolved as an image and as a kernel takes a kind of
role `any`, one of 2-D products a `tensor`, and so on (roles as in
docs/spaces.md). Variables are named by their kind's letter, numbered in
order of first use in the source. A split's sizes are those of the source
outputs its pieces are mapped to.
"""
import argparse
import sys

# TASO's include/taso/ops.h, enum OpType, in order (the value is the index).
TASO_OP_TYPES = [
    "OP_INPUT", "OP_WEIGHT", "OP_ANY", "OP_CONV2D", "OP_DROPOUT", "OP_LINEAR", "OP_POOL2D_MAX", "OP_POOL2D_AVG",
    "OP_RELU", "OP_SIGMOID", "OP_TANH", "OP_BATCHNORM", "OP_CONCAT", "OP_SPLIT", "OP_RESHAPE", "OP_TRANSPOSE",
    "OP_EW_ADD", "OP_EW_MUL", "OP_MATMUL", "OP_MUL", "OP_ENLARGE", "OP_MERGE_GCONV", "OP_CONSTANT_IMM",
    "OP_CONSTANT_ICONV", "OP_CONSTANT_ONE", "OP_CONSTANT_POOL", "OP_SQUEEZE", "OP_UNSQUEEZE", "OP_EW_SUB",
    "OP_EW_DIV", "OP_EW_EQUAL", "OP_EW_GREATER", "OP_EW_LESS", "OP_EW_MAX", "OP_EW_MIN", "OP_REDUCE_ARGMAX",
    "OP_REDUCE_ARGMIN", "OP_REDUCE_MAX", "OP_REDUCE_MEAN", "OP_REDUCE_MIN", "OP_REDUCE_PROD", "OP_REDUCE_SUM",
    "OP_PAD", "OP_SHAPE", "OP_SIZE", "OP_TOPK", "OP_WHERE", "OP_CEIL", "OP_CAST", "OP_EXP", "OP_ROUND", "OP_LOG",
    "OP_LOGICAL_NOT", "OP_SQRT", "OP_LEAKYRELU", "OP_SLICE", "OP_RESIZE", "OP_PRELU", "OP_FUSE_CONV_BATCHNORM",
    "OP_FUSE_CONV_BATCHNORM_ALPHA_VAR", "OP_FUSE_CONV_BATCHNORM_BIAS", "OP_BROADCAST_ADD"]
# enum PMParameter, in order.
TASO_PARAMS = [
    "PM_OP_TYPE", "PM_NUM_INPUTS", "PM_NUM_OUTPUTS", "PM_GROUP", "PM_KERNEL_H", "PM_KERNEL_W", "PM_STRIDE_H",
    "PM_STRIDE_W", "PM_PAD", "PM_ACTI", "PM_NUMDIM", "PM_AXIS", "PM_PERM", "PM_OUTSHUFFLE", "PM_MERGE_GCONV_COUNT",
    "PM_AXES", "PM_KEEP_DIMS", "PM_EPSILON"]
ACTIVATIONS = ["none", "sigmoid", "relu", "tanh"]  # enum ActiMode
PADDINGS = ["same", "valid"]  # enum PaddingMode


# --- protobuf wire format (the messages of rules.proto) -------------------

def _varint(buf, pos):
    value, shift = 0, 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated varint")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, pos


def _fields(buf):
    """(field number, value) of a message: ints for varints, bytes for
    length-delimited fields; other wire types are an error (rules.proto has none)."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 2:
            n, pos = _varint(buf, pos)
            value, pos = buf[pos:pos + n], pos + n
            if len(value) != n:
                raise ValueError("truncated field")
        else:
            raise ValueError(f"unexpected wire type {wire} for field {number}")
        yield number, value


def _int32(v):
    """A varint int32 as its signed value (negatives are sign-extended to 64 bits)."""
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >= 1 << 63 else v


def _message(buf, ints=(), repeated=()):
    """The fields of a message: named ints and lists of sub-message bytes."""
    out = {name: [] for name in repeated.values()} if repeated else {}
    for number, value in _fields(buf):
        if number in ints:
            out[ints[number]] = _int32(value)
        elif number in repeated:
            out[repeated[number]].append(value)
    return out


def _operator(buf):
    op = _message(buf, ints={1: "type"}, repeated={2: "input", 3: "para"})
    op["input"] = [_message(t, ints={1: "op", 2: "ts"}) for t in op["input"]]
    op["para"] = {p["key"]: p["value"] for p in (_message(b, ints={1: "key", 2: "value"}) for b in op["para"])}
    return op


def read_rules(data):
    """The rules of a serialized GraphSubst.RuleCollection: dicts of `src`,
    `dst` (operator lists) and `outputs` ((src op, src ts, dst op, dst ts) each)."""
    rules = []
    for number, value in _fields(data):
        if number != 1:
            continue
        r = _message(value, repeated={1: "src", 2: "dst", 3: "map"})
        rules.append({
            "src": [_operator(b) for b in r["src"]],
            "dst": [_operator(b) for b in r["dst"]],
            "outputs": [tuple(m[k] for k in ("s", "d", "st", "dt"))
                        for m in (_message(b, ints={1: "s", 2: "d", 3: "st", 4: "dt"}) for b in r["map"])],
        })
    return rules


# --- rules as expressions ---------------------------------------------------

class Inexpressible(Exception):
    """A rule tgr's operator table cannot state; the message names what is missing."""


class Mismatch(Exception):
    """Shapes that do not type-check (this kind assignment fails)."""


class Node:
    """A rule input (`var`: TASO's negative id) or an operator output."""

    def __init__(self, op, params=None, args=(), index=0, var=None):
        self.op, self.params, self.args, self.index, self.var = op, params or {}, list(args), index, var
        self.split_sizes = None  # a split's piece sizes, once the shapes are chosen


def _param(op, key, default=None):
    value = op["para"].get(TASO_PARAMS.index(key), default)
    if value is None:
        raise Inexpressible(f"{TASO_OP_TYPES[op['type']]} without {key}")
    return value


def _activation(op):
    act = _param(op, "PM_ACTI", 0)
    if not 0 <= act < len(ACTIVATIONS):
        raise Inexpressible(f"PM_ACTI={act} (not a TASO ActiMode)")
    return ACTIVATIONS[act]


def _transpose_perm(op):
    ndim, index = _param(op, "PM_NUMDIM"), _param(op, "PM_PERM")
    perm = []
    for _ in range(ndim):  # PM_PERM is the permutation's digits in base ndim, most significant first
        perm.insert(0, index % ndim)
        index //= ndim
    if index or sorted(perm) != list(range(ndim)):
        raise Inexpressible(f"PM_PERM={_param(op, 'PM_PERM')} is not a permutation of {ndim} axes")
    return perm


def _operator_node(op, args):
    """The tgr node(s) of one TASO operator: a list, one per output."""
    name = TASO_OP_TYPES[op["type"]] if 0 <= op["type"] < len(TASO_OP_TYPES) else f"type {op['type']}"
    if name == "OP_CONV2D":
        act = _activation(op)
        if act not in ("none", "relu"):
            raise Inexpressible(f"OP_CONV2D with PM_ACTI={act} (conv2d fuses relu only)")
        pad = _param(op, "PM_PAD")
        if not 0 <= pad < len(PADDINGS):
            raise Inexpressible(f"OP_CONV2D with PM_PAD={pad}")
        params = {"stride": (_param(op, "PM_STRIDE_H"), _param(op, "PM_STRIDE_W")), "pad": PADDINGS[pad], "act": act,
                  "kernel": (op["para"].get(TASO_PARAMS.index("PM_KERNEL_H")),
                             op["para"].get(TASO_PARAMS.index("PM_KERNEL_W")))}
        return [Node("conv2d", params, args)]
    if name == "OP_CONCAT":
        return [Node("concat", {"axis": _param(op, "PM_AXIS"), "ndim": op["para"].get(TASO_PARAMS.index("PM_NUMDIM"))},
                     args)]
    if name == "OP_SPLIT":
        n = _param(op, "PM_NUM_OUTPUTS")
        pieces = [Node("split", {"axis": _param(op, "PM_AXIS")}, args, index=k) for k in range(n)]
        for p in pieces:
            p.params["pieces"] = pieces
        return pieces
    simple = {"OP_EW_ADD": "add", "OP_EW_MUL": "mul", "OP_RELU": "relu", "OP_SIGMOID": "sigmoid", "OP_TANH": "tanh",
              "OP_MUL": "scalar_mul"}
    if name in simple:
        return [Node(simple[name], {}, args)]
    if name == "OP_MATMUL":
        act = _activation(op)
        product = Node("matmul", {}, args)
        return [product if act == "none" else Node(act, {}, [product])]
    if name == "OP_ENLARGE":
        return [Node("enlarge", {}, args)]
    if name == "OP_TRANSPOSE":
        return [Node("transpose", {"perm": _transpose_perm(op)}, args)]
    raise Inexpressible(f"TASO operator {name} has no counterpart in tgr's operator table")


def _side(ops, inputs, new_inputs):
    """The outputs of one side's operators: {(op id, output index): Node}.
    Rule inputs are shared through `inputs`; only the source may add one."""
    outputs = {}
    for i, op in enumerate(ops):
        args = []
        for t in op["input"]:
            if t["op"] < 0:
                if t["op"] not in inputs and not new_inputs:
                    raise ValueError(f"the target reads input {t['op']}, which the source does not")
                args.append(inputs.setdefault(t["op"], Node("var", var=t["op"])))
            elif (t["op"], t["ts"]) in outputs and t["op"] < i:
                args.append(outputs[(t["op"], t["ts"])])
            else:
                raise ValueError(f"operator {i} reads output {t['ts']} of operator {t['op']}, not an earlier one")
        for k, node in enumerate(_operator_node(op, args)):
            outputs[(i, k)] = node
    return outputs


def rule_sides(rule):
    """The source and target output tuples of a TASO rule (matched by position)."""
    inputs = {}
    src, dst = _side(rule["src"], inputs, True), _side(rule["dst"], inputs, False)
    if not rule["outputs"]:
        raise ValueError("a rule without mapped outputs")
    return [src[(s, st)] for s, _, st, _ in rule["outputs"]], [dst[(d, dt)] for _, d, _, dt in rule["outputs"]]



# --- shapes: a kind of the space for each rule input ----------------------

class Kind:
    def __init__(self, letter, shape, role):
        self.letter, self.shape, self.role = letter, shape, role


def read_kinds(path):
    """The variable kinds of a space file (docs/spaces.md), in its order, one per letter."""
    kinds = {}
    with open(path) as f:
        for line in f:
            words = line.split("#")[0].split()
            if len(words) >= 4 and words[0] == "variable" and words[1] not in kinds:
                shape = () if words[2] == "scalar" else tuple(int(d) for d in words[2].split("x"))
                kinds[words[1]] = Kind(words[1], shape, words[3])
    return list(kinds.values())


def _roles(node, wanted, out):
    """Collects for each rule input the roles its uses need: image and
    kernel for a convolution's operands, tensor for a product's, scalar for
    a scale; layout and elementwise operators pass their own role down."""
    if node.op == "var":
        out.setdefault(node.var, set())
        if wanted:
            out[node.var].add(wanted)
        return
    below = {"conv2d": ["image", "kernel"], "matmul": ["tensor", "tensor"], "scalar_mul": [wanted, "scalar"],
             "enlarge": ["kernel", "kernel"]}.get(node.op)
    for i, a in enumerate(node.args):
        _roles(a, below[i] if below else wanted, out)


def _candidates(kinds, roles):
    """The kinds a rule input may take, in the space's order."""
    def of(*rs):
        return [k for k in kinds if k.role in rs]
    if {"image", "kernel"} <= roles:
        return of("any")
    if roles == {"image"}:
        return of("image", "any")
    if roles == {"kernel"}:
        return of("kernel", "any")
    if roles == {"tensor"}:
        return of("tensor")
    if roles == {"scalar"}:
        return of("scalar")
    return [k for k in kinds if k.role != "scalar"] if not roles else []


def _conv_shape(params, x, k):
    if len(x) != 4 or len(k) != 4:
        raise Mismatch()
    n, c, h, w = x
    o, i, kh, kw = k
    if c % i or o % (c // i):  # groups = c / i, each of o / groups output channels
        raise Mismatch()
    if any(want is not None and want != got for want, got in zip(params["kernel"], (kh, kw))):
        raise Mismatch()  # TASO records the kernel's size
    sh, sw = params["stride"]
    if params["pad"] == "same":
        return (n, o, -(-h // sh), -(-w // sw))
    if h < kh or w < kw:
        raise Mismatch()
    return (n, o, (h - kh) // sh + 1, (w - kw) // sw + 1)


def _concat_shape(params, shapes):
    axis, first = params["axis"], shapes[0]
    if axis >= len(first) or (params["ndim"] is not None and params["ndim"] != len(first)):
        raise Mismatch()
    for s in shapes[1:]:
        if len(s) != len(first) or any(a != b for d, (a, b) in enumerate(zip(s, first)) if d != axis):
            raise Mismatch()
    return first[:axis] + (sum(s[axis] for s in shapes),) + first[axis + 1:]


def _split_shape(node, x):
    axis, sizes = node.params["axis"], node.split_sizes
    if sizes is None:
        return None  # known once the source's outputs are
    if axis >= len(x) or sum(sizes) != x[axis] or min(sizes) < 1:
        raise Mismatch()
    return x[:axis] + (sizes[node.index],) + x[axis + 1:]


def _matmul_shape(a, b):
    if len(a) != len(b) or len(a) not in (2, 3) or a[-1] != b[-2] or a[:-2] != b[:-2]:
        raise Mismatch()
    return a[:-1] + b[-1:]


def shape_of(node, assigned, memo):
    """The node's shape under the assignment of kinds; None while an input
    below it has none; Mismatch when it does not type-check."""
    if id(node) in memo:
        return memo[id(node)]
    if node.op == "var":
        result = assigned[node.var].shape if node.var in assigned else None
    else:
        args = [shape_of(a, assigned, memo) for a in node.args]
        result = None if any(a is None for a in args) else _op_shape(node, args)
    memo[id(node)] = result
    return result


def _op_shape(node, args):
    op = node.op
    if op == "conv2d":
        return _conv_shape(node.params, *args)
    if op == "concat":
        return _concat_shape(node.params, args)
    if op == "split":
        return _split_shape(node, args[0])
    if op == "matmul":
        return _matmul_shape(*args)
    if op in ("add", "mul"):
        if args[0] != args[1] or not args[0]:
            raise Mismatch()
        return args[0]
    if op in ("relu", "sigmoid", "tanh"):
        return args[0]
    if op == "scalar_mul":
        if args[1] != () or not args[0]:
            raise Mismatch()
        return args[0]
    if op == "enlarge":
        if len(args[0]) != 4 or len(args[1]) != 4:
            raise Mismatch()
        (o, i, kh, kw), big = args[0], args[1]
        if len(big) != 4 or big[2] < kh or big[3] < kw:
            raise Mismatch()
        return (o, i, big[2], big[3])
    if op == "transpose":
        if len(args[0]) != len(node.params["perm"]):
            raise Mismatch()
        return tuple(args[0][p] for p in node.params["perm"])
    raise AssertionError(op)


def _nodes(roots):
    """Every node below the roots, each once, children before parents."""
    seen, order = set(), []

    def visit(n):
        if id(n) not in seen:
            seen.add(id(n))
            for a in n.args:
                visit(a)
            order.append(n)
    for r in roots:
        visit(r)
    return order


def _set_split_sizes(src, dst, assigned):
    """Each target split's sizes: those of the source outputs its pieces are
    mapped to; one piece not mapped takes what the others leave."""
    memo = {}
    mapped = {id(d): shape_of(s, assigned, memo) for s, d in zip(src, dst)}
    for node in _nodes(dst):
        if node.op != "split" or node.index:
            continue
        axis, pieces = node.params["axis"], node.params["pieces"]
        sizes = [mapped[id(p)][axis] if id(p) in mapped and axis < len(mapped[id(p)]) else None for p in pieces]
        if sizes.count(None) == 1:
            whole = shape_of(node.args[0], assigned, memo)
            if whole is None or axis >= len(whole):
                raise Mismatch()
            sizes[sizes.index(None)] = whole[axis] - sum(s for s in sizes if s is not None)
        if None in sizes:
            raise Inexpressible("a split whose pieces' sizes the mapped outputs do not give")
        for p in pieces:
            p.split_sizes = sizes


def _types(src, dst, assigned, complete):
    """Whether every operator type-checks under the kinds assigned so far
    (splits wait for all of them) and, when every input has a kind, the two
    sides' outputs agree in shape. Leaves the splits' sizes set."""
    for n in _nodes(dst):
        n.split_sizes = None
    memo = {}
    try:
        for n in _nodes(src + dst):
            shape_of(n, assigned, memo)
        if not complete:
            return True
        _set_split_sizes(src, dst, assigned)
        memo = {}
        return all(shape_of(s, assigned, memo) == shape_of(d, assigned, memo) for s, d in zip(src, dst))
    except Mismatch:
        return False


def assign_kinds(src, dst, kinds):
    """The first assignment of kinds (backtracking in the space's order)
    under which the rule type-checks: {TASO input id: Kind}; the target's
    splits keep the sizes it gives."""
    order = [n.var for n in _nodes(src + dst) if n.op == "var"]
    roles = {}
    for root in src + dst:
        _roles(root, None, roles)
    options = [_candidates(kinds, roles[v]) for v in order]
    assigned = {}

    def search(i):
        if i == len(order):
            return _types(src, dst, assigned, True)
        for kind in options[i]:
            assigned[order[i]] = kind
            if _types(src, dst, assigned, False) and search(i + 1):
                return True
            del assigned[order[i]]
        return False
    if not search(0):
        raise Inexpressible("no kinds of the space type-check it")
    return assigned


# --- tgr's text --------------------------------------------------------------

def _dims(values):
    return "x".join(str(v) for v in values)


def _text(node, names, assigned, memo):
    args = [_text(a, names, assigned, memo) for a in node.args]
    op, p = node.op, node.params
    if op == "var":
        return names[node.var]
    params = []
    if op == "conv2d":
        params = [f"stride={_dims(p['stride'])}"] if p["stride"] != (1, 1) else []
        params += [f"pad={p['pad']}"] if p["pad"] != "same" else []
        params += [f"act={p['act']}"] if p["act"] != "none" else []
    elif op in ("concat", "split"):
        params = [f"axis={p['axis']}"] + ([f"sizes={_dims(node.split_sizes)}"] if op == "split" else [])
    elif op == "matmul" and len(shape_of(node, assigned, memo)) == 3:
        op = "batch_matmul"
    elif op == "enlarge":
        params, args = [f"size={_dims(shape_of(node.args[1], assigned, memo)[2:])}"], args[:1]
    elif op == "transpose" and p["perm"] != list(reversed(range(len(p["perm"])))):
        params = [f"perm={_dims(p['perm'])}"]
    text = op + (f"[{', '.join(params)}]" if params else "") + f"({', '.join(args)})"
    return text + (f".{node.index}" if op == "split" else "")


def rule_text(rule):
    """`SRC => DST | SHAPES` of a TASO rule (Inexpressible when tgr cannot state it)."""
    src, dst = rule_sides(rule)
    assigned = assign_kinds(src, dst, rule_text.kinds)
    names, counts = {}, {}
    for n in _nodes(src + dst):
        if n.op == "var" and n.var not in names:
            letter = assigned[n.var].letter
            names[n.var] = f"{letter}{counts.get(letter, 0)}"
            counts[letter] = counts.get(letter, 0) + 1
    memo = {}

    def side(outputs):
        texts = [_text(o, names, assigned, memo) for o in outputs]
        return texts[0] if len(texts) == 1 else "(" + ", ".join(texts) + ")"
    shapes = ",".join(f"{names[v]}={_dims(k.shape) if k.shape else 'scalar'}" for v, k in assigned.items())
    return f"{side(src)} => {side(dst)} | {shapes}"


def convert(rules, header):
    """The rule file: the header, each rule or why not, the counts by reason."""
    lines, reasons = list(header), {}
    for i, rule in enumerate(rules):
        try:
            lines += [f"# taso {i}", rule_text(rule)]
        except Inexpressible as e:
            lines.append(f"# taso {i}: inexpressible: {e}")
            reasons[str(e)] = reasons.get(str(e), 0) + 1
    lines.append(f"# {len(rules)} TASO rules: {len(rules) - sum(reasons.values())} converted, "
                 f"{sum(reasons.values())} inexpressible")
    lines += [f"#   {n} inexpressible: {r}" for r, n in sorted(reasons.items(), key=lambda x: (-x[1], x[0]))]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pb", help="TASO's graph_subst.pb")
    ap.add_argument("--space", default="spaces/taso.space", help="the space whose kinds the variables take")
    ap.add_argument("--header", action="append", default=[], help="a comment line for the top (repeatable)")
    ap.add_argument("-o", "--output", help="the rule file to write (default: standard output)")
    a = ap.parse_args()
    with open(a.pb, "rb") as f:
        rules = read_rules(f.read())
    rule_text.kinds = read_kinds(a.space)
    text = convert(rules, [f"# {h}" for h in a.header])
    if a.output:
        with open(a.output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
