// Every operator of the table on the GPU against the CPU reference
// interpreter, on random inputs and odd shapes, with fusion on and off
// (label `gpu`: skipped, visibly, where no GPU is visible).
#include <gtest/gtest.h>

#include "ir/text.h"
#include "runtime/cuda/gpu_error.h"
#include "tests/attention_graphs.h"
#include "tests/gpu/gpu_test_util.h"

namespace tgr {
namespace {

struct OpCase {
  std::string expr;
  std::string shapes;    // parse_shape_map text; "ids=int64:2x3"
  double tolerance = 1e-5;
  double scale = 1;      // floats in [-scale, scale)
  int64_t lo = 0, hi = 4;  // int64 inputs in [lo, hi)
};

std::ostream& operator<<(std::ostream& os, const OpCase& c) { return os << c.expr << " with " << c.shapes; }

class GpuOps : public ::testing::TestWithParam<OpCase> {};

TEST_P(GpuOps, MatchesTheCpuReference) {
  SKIP_WITHOUT_GPU();
  const OpCase& c = GetParam();
  DTypeMap dtypes;
  const ShapeMap shapes = parse_shape_map(c.shapes, &dtypes);
  const Graph g = build_graph(c.expr, shapes, dtypes);
  const std::vector<ConstantValue> inputs = test::random_values(g, 1, c.scale, c.lo, c.hi);
  const std::vector<ConstantValue> expected = evaluate_values<float>(g, inputs);
  test::expect_fused_and_unfused_match(g, inputs, expected, c.tolerance, c.expr);
}

const OpCase kCases[] = {
    // elementwise, broadcasting
    {"add(x0, x1)", "x0=2x3x5x7,x1=3x1x7"},
    {"sub(x0, x1)", "x0=2x3x5,x1=5"},
    {"mul(x0, x1)", "x0=4x1x6,x1=1x5x1"},
    {"div(x0, x1)", "x0=3x7,x1=7"},
    {"pow(abs(x0), x1)", "x0=5x9,x1=5x9"},
    {"scalar_mul(x0, s)", "x0=3x11,s=scalar"},
    {"neg(x0)", "x0=1031"},
    {"relu(x0)", "x0=3x5x7"},
    {"sigmoid(x0)", "x0=3x5x7", 1e-5, 6},
    {"tanh(x0)", "x0=3x5x7", 1e-5, 3},
    {"abs(x0)", "x0=17"},
    {"sqrt(abs(x0))", "x0=2x33"},
    {"exp(x0)", "x0=2x33", 1e-5, 4},
    {"log(abs(x0))", "x0=2x33"},
    {"erf(x0)", "x0=2x33", 1e-5, 3},
    {"softplus(x0)", "x0=2x33", 1e-5, 30},
    {"(cos(x0), sin(x0))", "x0=2x33", 1e-5, 30},
    {"floor(x0)", "x0=2x33", 0, 5},
    {"ceil(x0)", "x0=2x33", 0, 5},
    {"leaky_relu[alpha=0.2](x0)", "x0=4x9"},
    {"hard_sigmoid(x0)", "x0=4x9", 1e-5, 5},
    {"hard_swish(x0)", "x0=4x9", 1e-5, 8},
    {"clip[min=-0.5, max=0.3](x0)", "x0=4x9"},
    {"batch_norm(x0, s, b, m, abs(v))", "x0=2x5x3x3,s=5,b=5,m=5,v=5"},
    {"add(a, b)", "a=int64:2x3,b=int64:3", 0, 1, -50, 50},
    {"sub(a, neg(b))", "a=int64:2x3,b=int64:2x3", 0, 1, -50, 50},
    {"mul(abs(a), b)", "a=int64:4x5,b=int64:4x1", 0, 1, -50, 50},
    // fused chains
    {"mul(add(relu(x0), x1), sigmoid(x2))", "x0=2x3x8,x1=8,x2=2x3x8"},
    {"relu(batch_norm(x0, s, b, m, abs(v)))", "x0=1x4x5x5,s=4,b=4,m=4,v=4"},
    {"tanh(sub(mul(x0, x0), exp(x1)))", "x0=6x7,x1=6x7"},
    // matrix products
    {"matmul(a, b)", "a=33x65,b=65x17", 1e-4},
    {"matmul(a, b)", "a=1x768,b=768x3", 1e-4},
    {"batch_matmul(a, b)", "a=3x7x9,b=3x9x5", 1e-4},
    // convolution
    {"conv2d[stride=2x2](x, k)", "x=1x3x7x5,k=4x3x3x3", 1e-4},
    {"conv2d[stride=2x2](x, k)", "x=1x3x8x6,k=4x3x3x3", 1e-4},    // "same": asymmetric padding
    {"conv2d[dilation=2x2](x, k)", "x=1x6x9x9,k=6x2x3x3", 1e-4},  // 3 groups
    {"conv2d(x, k)", "x=2x8x10x10,k=8x1x3x3", 1e-4},              // depthwise
    {"conv2d[pad=valid, stride=2x1](x, k)", "x=1x5x11x9,k=7x5x1x3", 1e-4},
    {"conv2d[pad=1x0x2x1](x, k)", "x=1x3x6x7,k=2x3x3x2", 1e-4},
    {"conv2d[act=relu](x, k)", "x=1x3x7x5,k=4x3x3x3", 1e-4},
    {"add(conv2d(x, k), b)", "x=1x3x7x5,k=4x3x3x3,b=1x4x1x1", 1e-4},
    {"relu(add(conv2d(x, k), b))", "x=1x3x7x5,k=4x3x3x3,b=4x1x1", 1e-4},
    {"relu(add(add(conv2d(x, k), b), z))", "x=1x8x7x5,k=4x8x1x1,b=1x4x1x1,z=1x4x7x5", 1e-4},
    {"relu(add(z, conv2d[stride=2x2](x, k)))", "x=1x3x8x6,k=4x3x3x3,z=1x4x4x3", 1e-4},
    {"conv2d(x, k)", "x=2x16x5x3,k=8x16x1x1", 1e-4},  // 1x1: cuBLAS or cuDNN, measured
    {"relu(add(conv2d(x, k), b))", "x=1x64x7x7,k=32x64x1x1,b=1x32x1x1", 1e-4},
    // a bias without relu: one fused call where the implicit precomputed GEMM is timed fastest
    {"add(conv2d(x, k), b)", "x=1x64x14x14,k=96x64x1x1,b=1x96x1x1", 1e-4},
    {"add(b, conv2d(x, k))", "x=1x32x9x9,k=48x32x3x3,b=1x48x1x1", 1e-4},
    {"enlarge[size=5x5](k)", "k=2x3x3x1"},
    {"conv2d(x, conv_identity[channels=3, kernel=3x3]())", "x=1x3x5x6", 1e-4},
    {"conv2d(x, pool_kernel[channels=3, kernel=3x3]())", "x=1x3x5x6", 1e-4},
    // pooling
    {"maxpool[kernel=3x3, stride=2x2](x)", "x=1x3x9x8"},
    {"maxpool[kernel=2x2, dilation=2x2, pad=valid](x)", "x=2x2x7x9"},
    {"avgpool[kernel=3x3, stride=2x2, include_pad=1](x)", "x=1x3x9x8"},
    {"avgpool[kernel=3x3](x)", "x=1x2x5x6"},
    {"avgpool[kernel=7x7, pad=valid](x)", "x=1x16x7x7"},            // global: a warp per plane
    {"avgpool[kernel=56x56, pad=valid](x)", "x=1x96x56x56", 1e-5},  // global: a block per plane
    {"avgpool[kernel=3x5, pad=valid](x)", "x=2x3x3x5"},             // global, not square
    // layout
    {"transpose[perm=0x2x1x3](x)", "x=2x3x4x5"},
    {"transpose(x)", "x=3x7"},
    {"concat[axis=1](x0, x1, x2)", "x0=2x3x4,x1=2x1x4,x2=2x5x4"},
    {"concat[axis=0](a, b)", "a=int64:2x3,b=int64:1x3", 0, 1, -9, 9},
    {"concat[axis=1](x0, x1, x0, x2, x1)", "x0=1x3x5x5,x1=1x7x5x5,x2=1x1x5x5"},
    {"(split[axis=2, sizes=1x3](x).0, split[axis=2, sizes=1x3](x).1)", "x=2x3x4"},
    {"slice[starts=0x1, ends=3x5, steps=1x2](x)", "x=4x6"},
    {"slice[starts=3x5, ends=-1x0, steps=-1x-2](x)", "x=4x6"},
    {"expand[shape=2x3x4](x)", "x=3x1"},
    {"pad[pads=0x1x2x0, value=0.5](x)", "x=3x4"},
    {"reshape[shape=6x4](x)", "x=2x3x4"},
    {"relu(reshape[shape=4x6](relu(x)))", "x=2x3x4"},
    // views (runtime/views.h): split pieces and reshapes read in place
    {"(add(split[axis=1, sizes=8x8x8](matmul(x, w)).0, b), relu(split[axis=1, sizes=8x8x8](matmul(x, w)).1),"
     " sigmoid(split[axis=1, sizes=8x8x8](matmul(x, w)).2))",
     "x=5x16,w=16x24,b=8", 1e-4},
    {"add(reshape[shape=2x3x12](split[axis=1, sizes=12x4](x).0), b)", "x=6x16,b=12"},
    {"matmul(split[axis=1, sizes=8x4](x).1, w)", "x=9x12,w=4x5", 1e-4},
    {"matmul(w, split[axis=1, sizes=4x8](x).0)", "x=6x12,w=3x6", 1e-4},
    {"matmul(split[axis=1, sizes=5x4](x).1, w)", "x=6x9,w=4x3", 1e-4},  // unaligned: copied
    {"batch_matmul(split[axis=2, sizes=4x4](x).1, y)", "x=3x5x8,y=3x4x6", 1e-4},
    {"transpose[perm=1x0](split[axis=1, sizes=3x5](x).1)", "x=4x8"},
    {"add(split[axis=1, sizes=2x2](split[axis=1, sizes=4x4](x).0).1, y)", "x=3x8,y=2"},
    {"(softmax[axis=1](split[axis=1, sizes=3x5](x).0), add(split[axis=1, sizes=3x5](x).1, y))", "x=4x8,y=5"},
    {"(split[axis=1, sizes=3x5](x).0, split[axis=1, sizes=3x5](x).1)", "x=4x8"},
    {"conv2d(split[axis=1, sizes=4x4](x).1, k)", "x=1x8x5x5,k=3x4x3x3", 1e-4},
    {"relu(add(conv2d(x, k), split[axis=1, sizes=4x4](z).0))", "x=2x8x5x5,k=4x8x1x1,z=2x8x5x5", 1e-4},
    {"relu(reshape[shape=12](split[axis=1, sizes=4x4](x).1))", "x=3x8"},
    {"concat[axis=0](split[axis=1, sizes=3x5](x).1, y)", "x=4x8,y=2x5"},
    {"expand[shape=2x4x5](split[axis=1, sizes=3x5](x).1)", "x=4x8"},
    {"add(split[axis=1, sizes=2x3](a).1, b)", "a=int64:4x5,b=int64:3", 0, 1, -50, 50},
    // normalisation and reductions
    {"softmax[axis=2](x)", "x=2x3x37", 1e-5, 4},
    {"softmax[axis=1](x)", "x=2x5x3", 1e-5, 4},
    {"softmax[axis=1](x)", "x=4x2000", 1e-5, 4},
    {"layer_norm[axis=2](x, s, b)", "x=2x3x50,s=50,b=50"},
    {"layer_norm[axis=1](x, s, b)", "x=2x3x4,s=3x4,b=3x4"},
    {"layer_norm[axis=1](x, s, b)", "x=3x768,s=768,b=768"},
    {"reduce_sum[axes=1](x)", "x=2x3x4"},
    {"reduce_mean[axes=0x2, keepdims=0](x)", "x=2x3x4"},
    {"reduce_sum[axes=0](a)", "a=int64:5x3", 0, 1, -9, 9},
    {"reduce_max[axes=1](x)", "x=2x3x4"},
    {"reduce_min[axes=0x2, keepdims=0](x)", "x=2x3x4"},
    {"reduce_max[axes=0](a)", "a=int64:5x3", 0, 1, -9, 9},
    // over trailing axes: each output a contiguous run (kernels_norm.cu, reduce_rows)
    {"reduce_mean[axes=2x3](x)", "x=2x5x33x40", 1e-5},
    {"reduce_sum[axes=1](x)", "x=4x50x1"},
    {"reduce_max[axes=2](x)", "x=3x5x7"},
    {"reduce_min[axes=1x2, keepdims=0](x)", "x=4x3x20"},
    {"reduce_max[axes=1](log(x))", "x=6x40"},  // NaN (log of a negative) propagates, as on the CPU
    {"reduce_sum[axes=1](x)", "x=3x5000", 1e-4},
    {"reduce_sum[axes=1](x)", "x=0x50"},  // no rows: nothing to launch
    // mixed types
    {"less(x0, x1)", "x0=3x4,x1=4"},
    {"greater_equal(x0, x1)", "x0=3x4,x1=3x1"},
    {"equal(a, b)", "a=int64:3x4,b=int64:4", 0, 1, 0, 3},
    {"less_equal(a, b)", "a=int64:3x4,b=int64:4", 0, 1, 0, 3},
    {"greater(a, b)", "a=int64:3x4,b=int64:3x4", 0, 1, 0, 3},
    {"is_nan(log(x))", "x=5x5"},
    {"logical_not(c)", "c=bool:4x3"},
    {"cast[to=int64](x)", "x=4x7", 0, 20},
    {"cast[to=bool](x)", "x=4x7", 0, 2},
    {"cast[to=float](a)", "a=int64:4x7", 1e-6, 1, -100, 100},
    {"cast[to=bool](a)", "a=int64:4x7", 0, 1, -2, 2},
    {"where(c, x, y)", "c=bool:2x1x4,x=2x3x4,y=4"},
    {"where(c, a, b)", "c=bool:3,a=int64:2x3,b=int64:3", 0, 1, -5, 5},
    {"gather[axis=0](t, ids)", "t=10x6,ids=int64:2x3", 1e-6, 1, -10, 10},
    {"gather[axis=1](x, ids)", "x=3x7x2,ids=int64:4", 1e-6, 1, 0, 7},
    {"gather_elements[axis=1](x, ids)", "x=3x5,ids=int64:3x4", 1e-6, 1, -5, 5},
    // constants (computed at load)
    {"add(x, ones[shape=3x4]())", "x=3x4"},
    {"matmul(x, eye[n=4]())", "x=3x4", 1e-4},
    {"eye[n=3]()", ""},
};

INSTANTIATE_TEST_SUITE_P(Table, GpuOps, ::testing::ValuesIn(kCases));

// Fusions across operator families (runtime/execution_plan.h), named
// Fusion/GpuOps.MatchesTheCpuReference/N.
const OpCase kFusionCases[] = {
    // products with a cuBLASLt epilogue (Task::Kind::kProduct): bias per column, residual, relu
    {"add(matmul(x, w), b)", "x=33x65,w=65x17,b=17", 1e-4},                                                    // 0
    {"relu(add(b, matmul(x, w)))", "x=7x20,w=20x37,b=37", 1e-4},                                               // 1
    {"add(matmul(x, w), b)", "x=1x768,w=768x3,b=3", 1e-4},                                                     // 2
    {"add(add(reshape[shape=2x3x24](matmul(x, w)), b), z)", "x=6x16,w=16x24,b=24,z=2x3x24", 1e-4},             // 3
    {"relu(add(add(reshape[shape=3x5x19](matmul(x, w)), b), z))", "x=15x33,w=33x19,b=1x1x19,z=3x5x19", 1e-4},  // 4
    {"relu(matmul(x, w))", "x=9x13,w=13x11", 1e-4},                                                            // 5
    {"add(matmul(x, w), z)", "x=9x13,w=13x11,z=9x11", 1e-4},                                                   // 6
    {"add(matmul(split[axis=1, sizes=8x4](x).0, w), b)", "x=9x12,w=8x5,b=5", 1e-4},  // 7: strided A
    {"add(matmul(x, w), b)", "x=5x7,w=7x3,b=5x1", 1e-4},                             // 8: per row: not fused
    // transposes as views (runtime/views.h): read with strides by elementwise kernels and cuBLAS(Lt)
    {"mul(transpose[perm=0x2x1x3](reshape[shape=2x5x4x8](x)), s)", "x=10x32,s=scalar"},  // 9
    {"batch_matmul(q, reshape[shape=4x8x5](transpose[perm=0x2x3x1](reshape[shape=1x5x4x8](k))))", "q=4x5x8,k=5x32",
     1e-4},  // 10: keys, op T
    {"batch_matmul(p, reshape[shape=4x5x8](transpose[perm=0x2x1x3](reshape[shape=1x5x4x8](v))))", "p=4x5x5,v=5x32",
     1e-4},  // 11: values, ld 32
    {"batch_matmul(p, reshape[shape=8x5x8](transpose[perm=0x2x1x3](reshape[shape=2x5x4x8](v))))", "p=8x5x5,v=10x32",
     1e-4},                                                                                  // 12: batch 2: copied
    {"matmul(transpose(x), w)", "x=13x7,w=13x5", 1e-4},                                      // 13
    {"matmul(x, transpose(w))", "x=7x13,w=5x13", 1e-4},                                      // 14
    {"matmul(transpose(x), transpose(w))", "x=13x7,w=5x13", 1e-4},                           // 15
    {"add(matmul(x, transpose(w)), b)", "x=7x13,w=5x13,b=5", 1e-4},                          // 16: cuBLASLt, op T
    {"relu(add(matmul(transpose(x), w), b))", "x=13x7,w=13x5,b=5", 1e-4},                    // 17
    {"batch_matmul(x, transpose[perm=0x2x1](y))", "x=3x7x9,y=3x5x9", 1e-4},                  // 18
    {"matmul(transpose(x), w)", "x=1x7,w=1x5", 1e-4},                                        // 19: one row
    {"add(transpose[perm=1x0](a), b)", "a=int64:3x4,b=int64:3", 0, 1, -50, 50},              // 20
    {"(relu(transpose[perm=1x0](x)), transpose[perm=1x0](x))", "x=5x6"},                     // 21: output: copied
    {"softmax[axis=1](transpose[perm=1x0](x))", "x=5x6", 1e-5, 4},                           // 22: copied
    {"reshape[shape=5x32](transpose[perm=0x2x1x3](reshape[shape=1x4x5x8](z)))", "z=4x5x8"},  // 23: head merge
    // comparisons, is_nan, logical_not, cast and where in elementwise programs
    {"where(is_nan(log(x)), z, log(x))", "x=6x37,z=scalar"},                                   // 24
    {"where(is_nan(softmax[axis=1](x)), z, softmax[axis=1](x))", "x=3x37,z=scalar", 1e-5, 4},  // 25
    {"where(less(x, y), relu(x), y)", "x=4x9,y=9"},                                            // 26
    {"where(logical_not(is_nan(log(x))), x, y)", "x=5x7,y=7"},                                 // 27
    {"where(greater_equal(a, b), a, b)", "a=int64:3x4,b=int64:4", 0, 1, -9, 9},                // 28: int64
    {"cast[to=float](less(x, y))", "x=3x5,y=5"},                                               // 29
    {"cast[to=int64](mul(x, s))", "x=4x7,s=scalar", 0, 20},                                    // 30: truncates
    {"cast[to=bool](relu(x))", "x=4x7"},                                                       // 31
    {"logical_not(equal(a, b))", "a=int64:3x4,b=int64:4", 0, 1, 0, 3},                         // 32
    {"add(cast[to=float](a), x)", "a=int64:3x4,x=4", 1e-6, 1, -100, 100},                      // 33
    {"where(c, split[axis=1, sizes=3x5](x).1, y)", "c=bool:4x5,x=4x8,y=5"},                    // 34: strided
    {"where(c, x, y)", "c=bool:2x1x4,x=2x3x4,y=4"},                                            // 35
    {"where(logical_not(c), d, logical_not(d))", "c=bool:3x4,d=bool:4"},                       // 36: bools only
    // the head merge written in place by the product (runtime/views.h: cuBLAS's ldc and batch stride)
    {"relu(reshape[shape=5x32](transpose[perm=0x2x1x3](reshape[shape=1x4x5x8](batch_matmul(p, v)))))",
     "p=4x5x5,v=4x5x8", 1e-4},  // 37: ldc 32, batch stride 8
    {"reshape[shape=5x32](transpose[perm=0x2x1x3](reshape[shape=1x4x5x8](batch_matmul(p, v))))", "p=4x5x5,v=4x5x8",
     1e-4},  // 38: the merged value a graph output
    {"relu(reshape[shape=6x21](transpose[perm=2x0x1x3](reshape[shape=2x3x3x7](batch_matmul(p, v)))))",
     "p=6x3x5,v=6x5x7", 1e-4},  // 39: sequence-first, B = 2: ldc 42, batch stride 7 (28 bytes)
    {"relu(reshape[shape=2x5x32](transpose[perm=0x2x1x3](reshape[shape=2x4x5x8](batch_matmul(p, v)))))",
     "p=8x5x5,v=8x5x8", 1e-4},  // 40: batch-first, B = 2: copied
    // a product's constant scale as cuBLAS's alpha (Task::scale): 2 here, so a dropped alpha fails
    {"mul(batch_matmul(p, v), add(ones[shape=1](), ones[shape=1]()))", "p=3x5x7,v=3x7x4", 1e-4},  // 41
    {"softmax[axis=2](mul(add(ones[shape=1](), ones[shape=1]()), "
     "batch_matmul(q, reshape[shape=4x8x5](transpose[perm=0x2x3x1](reshape[shape=1x5x4x8](k))))))",
     "q=4x5x8,k=5x32", 1e-4, 4},  // 42: keys op T, then softmax
    {"add(mul(matmul(x, w), add(ones[shape=1](), ones[shape=1]())), b)", "x=9x13,w=13x11,b=11", 1e-4},  // 43: cuBLASLt
    {"mul(matmul(x, w), add(ones[shape=1](), ones[shape=1]()))", "x=9x13,w=13x11", 1e-4},  // 44: alpha alone
    {"relu(reshape[shape=3x36](transpose[perm=0x2x1x3](reshape[shape=1x12x3x3](batch_matmul(p, "
     "transpose[perm=0x2x1](v))))))",
     "p=12x3x9,v=12x3x9", 1e-4},  // 41: 12 heads, keys-like operand through op T
};
INSTANTIATE_TEST_SUITE_P(Fusion, GpuOps, ::testing::ValuesIn(kFusionCases));

// Attention blocks (tests/attention_graphs.h; their plans are checked in
// tests/execution_plan_test.cpp): the second batch_matmul writes the merged
// heads in place (batch-first with B = 1, sequence-first with any B), or the
// merge copies (batch-first, B > 1). Named Attention/GpuOps.MatchesTheCpuReference/N.
OpCase attention_case(int64_t batch, int64_t heads, int64_t seq, int64_t dim, test::HeadMerge merge) {
  const test::AttentionBlock a = test::attention_block(batch, heads, seq, dim, merge);
  return {a.expr, a.shapes, 1e-4};
}
const OpCase kAttentionCases[] = {
    attention_case(1, 4, 5, 8, test::HeadMerge::kBatchFirst),      // 0
    attention_case(1, 12, 17, 16, test::HeadMerge::kBatchFirst),   // 1: 12 heads, S odd
    attention_case(1, 3, 7, 5, test::HeadMerge::kBatchFirst),      // 2: D odd
    attention_case(2, 4, 5, 8, test::HeadMerge::kBatchFirst),      // 3: the merge copies
    attention_case(2, 3, 7, 5, test::HeadMerge::kBatchFirst),      // 4: the merge copies
    attention_case(1, 4, 17, 8, test::HeadMerge::kSequenceFirst),  // 5: ViT
    attention_case(2, 4, 5, 8, test::HeadMerge::kSequenceFirst),   // 6
    attention_case(3, 2, 6, 5, test::HeadMerge::kSequenceFirst),   // 7
    attention_case(2, 1, 5, 8, test::HeadMerge::kSequenceFirst),   // 8: one head
};
INSTANTIATE_TEST_SUITE_P(Attention, GpuOps, ::testing::ValuesIn(kAttentionCases));

// Concatenations written in place (runtime/views.h; their plans are checked
// in tests/execution_plan_test.cpp): producers write their pieces into the
// concatenation's bytes, and it copies only the rest. Named
// ConcatInPlace/GpuOps.MatchesTheCpuReference/N.
const OpCase kConcatCases[] = {
    {"softmax[axis=1](concat[axis=1](relu(x), conv2d(x, k)))", "x=1x4x6x6,k=3x4x1x1", 1e-4},  // 0: runs nothing
    {"concat[axis=1](relu(x), conv2d(relu(x), k1), conv2d(sigmoid(concat[axis=1](relu(x), conv2d(relu(x), k1))), k2))",
     "x=1x4x6x6,k1=4x4x1x1,k2=4x8x1x1", 1e-4},  // 1: DenseNet: the inner concatenation a view of the outer's start
    {"softmax[axis=1](concat[axis=1](relu(y), x, sigmoid(y)))", "x=1x4x6x6,y=1x8x6x6", 1e-4},  // 2: copies x only
    {"softmax[axis=1](concat[axis=1](split[axis=1, sizes=4x4](relu(x)).0, conv2d(split[axis=1, sizes=4x4](relu(x)).1, "
     "k)))",
     "x=1x8x6x6,k=5x4x3x3", 1e-4},  // 3: Inception: a piece of a split copied, the convolution in place
    {"(relu(x), softmax[axis=1](concat[axis=1](relu(x), sigmoid(x))))", "x=1x4x6x6", 1e-4},  // 4: a graph output copied
    {"softmax[axis=1](concat[axis=1](relu(x), sigmoid(y)))", "x=2x4x6x6,y=2x4x6x6", 1e-4},   // 5: batch 2 copies
};
INSTANTIATE_TEST_SUITE_P(ConcatInPlace, GpuOps, ::testing::ValuesIn(kConcatCases));

// Gathers of one constant index (runtime/views.h): ViT's query, key and value
// picked from one [3, S, 1, E] tensor are views at offsets of E floats,
// read with strides by an elementwise program and by cuBLAS; one read by
// softmax runs the gather's kernel on a copy of the transposed input.
Graph picked_qkv(bool with_softmax) {
  const int64_t S = 7, E = 12;
  Graph g;
  const ValueRef packed = g.apply("relu", {g.add_input("x", {S, 3 * E})}, {});
  const ValueRef heads =
      g.apply("transpose", {g.apply("reshape", {packed}, {{"shape", std::vector<int64_t>{S, 1, 3, E}}})},
              {{"perm", std::vector<int64_t>{2, 0, 1, 3}}});  // [3, S, 1, E]
  std::vector<ValueRef> qkv;
  for (int64_t k : {0, 1, -1}) {
    const ValueRef index = g.add_constant(ConstantValue(DType::kInt64, Tensor<int64_t>(Shape{}, {k})));
    qkv.push_back(g.apply("gather", {heads, index}, {{"axis", int64_t{0}}}));  // [S, 1, E]
  }
  g.add_output(g.apply("add", {g.apply("mul", {qkv[0], qkv[1]}, {}), qkv[2]}, {}));
  const ValueRef v = g.apply("reshape", {qkv[2]}, {{"shape", std::vector<int64_t>{1, S, E}}});
  const ValueRef k = g.apply("reshape", {qkv[1]}, {{"shape", std::vector<int64_t>{1, S, E}}});
  g.add_output(g.apply("batch_matmul", {v, g.apply("transpose", {k}, {{"perm", std::vector<int64_t>{0, 2, 1}}})}, {}));
  if (with_softmax) g.add_output(g.apply("softmax", {qkv[0]}, {{"axis", int64_t{2}}}));
  return g;
}

TEST(GpuViews, GathersOfOneConstantIndexMatchTheCpuReference) {
  SKIP_WITHOUT_GPU();
  for (bool with_softmax : {false, true}) {
    const Graph g = picked_qkv(with_softmax);
    const std::vector<ConstantValue> inputs = test::random_values(g, 3);
    const std::vector<ConstantValue> expected = evaluate_values<float>(g, inputs);
    test::expect_fused_and_unfused_match(g, inputs, expected, 1e-4, with_softmax ? "with softmax" : "views only");
  }
}

// Every operator of the table appears in some case above.
TEST(GpuOpsCoverage, EveryOperatorHasACase) {
  std::string all;
  for (const OpCase& c : kCases) all += c.expr + " ";
  for (const OpDef* op : OpTable::instance().all()) {
    const bool found = all.find(op->name + "(") != std::string::npos || all.find(op->name + "[") != std::string::npos;
    EXPECT_TRUE(found) << op->name << " has no GPU test case";
  }
}

TEST(GpuErrors, AnUnsupportedShapeNamesTheNodeAndOperator) {
  SKIP_WITHOUT_GPU();
  const Graph g = build_graph("relu(x)", {{"x", Shape(9, 1)}});
  try {
    gpu::GpuModel::load(g);
    FAIL() << "a rank-9 tensor loaded";
  } catch (const gpu::GpuError& e) {
    EXPECT_NE(std::string(e.what()).find("relu (node 1)"), std::string::npos) << e.what();
  }
}

TEST(GpuErrors, WrongInputsAreRefused) {
  SKIP_WITHOUT_GPU();
  const Graph g = build_graph("relu(x)", {{"x", Shape{2, 3}}});
  gpu::GpuModel model = gpu::GpuModel::load(g);
  std::vector<ConstantValue> wrong{ConstantValue(Tensor<float>({3, 2}))};
  EXPECT_THROW(model.run(wrong), gpu::GpuError);
}

}  // namespace
}  // namespace tgr
