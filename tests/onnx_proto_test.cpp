// The ONNX protobuf layer: loading the bundled models and test data, tensor
// conversions in both directions, external data, and malformed input.
#include "onnx/onnx_proto.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>

namespace tgr::onnx_io {
namespace {
namespace fs = std::filesystem;
using onnx::TensorProto;

const std::string kData = TGR_TEST_DATA;
const std::string kSqueeze = kData + "/models/squeezenet1_1.onnx";
const std::string kBert = kData + "/models/bert_tiny.onnx";

// A fresh folder under the system temp directory, removed afterwards.
class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() / ("tgr_onnx_proto_" + std::to_string(std::random_device{}()));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string read_prefix(const std::string& path, size_t n) {
  std::string bytes(n, '\0');
  std::ifstream(path, std::ios::binary).read(bytes.data(), static_cast<std::streamsize>(n));
  return bytes;
}

// Runs `fn`, expects an OnnxError whose message contains `needle`.
template <class Fn>
void expect_error(Fn fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "no OnnxError (expected one mentioning " << needle << ")";
  } catch (const OnnxError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

int count_ops(const onnx::GraphProto& g, const std::string& op) {
  int n = 0;
  for (const auto& node : g.node()) n += node.op_type() == op;
  return n;
}

TEST(OnnxProto, LoadsSqueezeNet) {
  const onnx::ModelProto m = load_model(kSqueeze);
  EXPECT_EQ(default_opset(m), 17);
  ASSERT_EQ(m.graph().input_size(), 1);
  EXPECT_EQ(m.graph().input(0).name(), "input.1");
  EXPECT_EQ(m.graph().input(0).type().tensor_type().elem_type(), TensorProto::FLOAT);
  ASSERT_EQ(m.graph().output_size(), 1);
  EXPECT_EQ(m.graph().output(0).name(), "117");
  EXPECT_EQ(count_ops(m.graph(), "Conv"), 26);
  EXPECT_EQ(m.graph().initializer_size(), 34);
  // Every initializer converts, and its values match its dims.
  for (const auto& init : m.graph().initializer()) {
    const ConstantValue v = tensor_to_constant(init);
    EXPECT_EQ(v.dtype, DType::kFloat);
    EXPECT_EQ(v.real.size(), num_elements(v.shape()));
  }
}

TEST(OnnxProto, LoadsBert) {
  const onnx::ModelProto m = load_model(kBert);
  EXPECT_EQ(default_opset(m), 17);
  ASSERT_EQ(m.graph().input_size(), 1);
  EXPECT_EQ(m.graph().input(0).name(), "input.1");
  const int32_t et = m.graph().input(0).type().tensor_type().elem_type();
  EXPECT_EQ(et, TensorProto::INT64);
  EXPECT_EQ(dtype_of_elem_type(et), DType::kInt64);
  EXPECT_EQ(m.graph().output(0).name(), "283");
}

TEST(OnnxProto, DefaultOpsetDomains) {
  onnx::ModelProto m;
  expect_error([&] { default_opset(m); }, "opset");
  auto* ml = m.add_opset_import();
  ml->set_domain("ai.onnx.ml");
  ml->set_version(3);
  expect_error([&] { default_opset(m); }, "opset");
  auto* def = m.add_opset_import();
  def->set_domain("ai.onnx");
  def->set_version(13);
  EXPECT_EQ(default_opset(m), 13);
}

TEST(OnnxProto, ReadsTestData) {
  const NamedTensor in = read_tensor_file(kData + "/models/squeezenet1_1-testdata/input_0.pb");
  EXPECT_EQ(in.name, "input.1");
  EXPECT_EQ(in.value.dtype, DType::kFloat);
  EXPECT_EQ(in.value.shape(), (Shape{1, 3, 224, 224}));
  EXPECT_FLOAT_EQ(in.value.real.data[0], 0.73934567f);
  EXPECT_FLOAT_EQ(in.value.real.data[1], 2.0246596f);

  const NamedTensor out = read_tensor_file(kData + "/models/squeezenet1_1-testdata/output_0.pb");
  EXPECT_EQ(out.name, "117");
  EXPECT_EQ(out.value.dtype, DType::kFloat);
  EXPECT_EQ(out.value.shape(), (Shape{1, 1000}));
  EXPECT_FLOAT_EQ(out.value.real.data[0], 0.2922958f);

  const NamedTensor ids = read_tensor_file(kData + "/models/bert_tiny-testdata/input_0.pb");
  EXPECT_EQ(ids.name, "input.1");
  EXPECT_EQ(ids.value.dtype, DType::kInt64);
  EXPECT_EQ(ids.value.shape(), (Shape{1, 64}));
  EXPECT_EQ(ids.value.ints.data[0], 979);
  EXPECT_EQ(ids.value.ints.data[3], 380);

  const NamedTensor hidden = read_tensor_file(kData + "/models/bert_tiny-testdata/output_0.pb");
  EXPECT_EQ(hidden.value.shape(), (Shape{1, 64, 128}));
}

ConstantValue float_value(Shape s, std::vector<float> v) { return ConstantValue(Tensor<float>(std::move(s), std::move(v))); }
// A float16 or bfloat16 constant: float32 numbers that are exactly its type's.
ConstantValue half_value(DType t, Shape s, std::vector<float> v) {
  ConstantValue c = float_value(std::move(s), std::move(v));
  c.dtype = t;
  return c;
}
ConstantValue int_value(DType t, Shape s, std::vector<int64_t> v) {
  return ConstantValue(t, Tensor<int64_t>(std::move(s), std::move(v)));
}

void expect_same(const ConstantValue& a, const ConstantValue& b) {
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.shape(), b.shape());
  EXPECT_EQ(a.real.data, b.real.data);
  EXPECT_EQ(a.ints.data, b.ints.data);
}

TEST(OnnxProto, ConstantRoundTrips) {
  const std::vector<ConstantValue> values = {
      float_value({2, 3}, {1.5f, -2.f, 0.f, 3.25f, 1e-30f, -7.f}),
      float_value({}, {42.f}),  // scalar
      float_value({0, 4}, {}),  // empty
      int_value(DType::kInt64, {3}, {-1, 0, int64_t{1} << 40}),
      int_value(DType::kBool, {2, 2}, {1, 0, 0, 1}),
      half_value(DType::kFloat16, {4}, {1.f, -65504.f, 0x1p-24f, 1.3330078125f}),
      half_value(DType::kBFloat16, {3}, {1.5f, -0x1p100f, 3.140625f}),
  };
  TempDir dir;
  for (const ConstantValue& v : values) {
    const TensorProto t = constant_to_tensor(v, "c");
    EXPECT_EQ(t.name(), "c");
    EXPECT_EQ(t.data_type(), onnx_elem_type(v.dtype));
    EXPECT_TRUE(t.has_raw_data());
    if (v.dtype == DType::kFloat16 || v.dtype == DType::kBFloat16) {  // 16-bit words, the model's own size
      EXPECT_EQ(t.raw_data().size(), 2 * v.real.data.size());
    }
    expect_same(tensor_to_constant(t), v);

    const std::string path = dir.file("t.pb");
    write_tensor_file(v, "x.y", path);
    const NamedTensor back = read_tensor_file(path);
    EXPECT_EQ(back.name, "x.y");
    expect_same(back.value, v);
  }
}

TEST(OnnxProto, ElemTypes) {
  EXPECT_EQ(onnx_elem_type(DType::kFloat), TensorProto::FLOAT);
  EXPECT_EQ(onnx_elem_type(DType::kInt64), TensorProto::INT64);
  EXPECT_EQ(onnx_elem_type(DType::kBool), TensorProto::BOOL);
  EXPECT_EQ(onnx_elem_type(DType::kFloat16), TensorProto::FLOAT16);
  EXPECT_EQ(onnx_elem_type(DType::kBFloat16), TensorProto::BFLOAT16);
  for (DType t : {DType::kFloat, DType::kInt64, DType::kBool, DType::kFloat16, DType::kBFloat16})
    EXPECT_EQ(dtype_of_elem_type(onnx_elem_type(t)), t);
  EXPECT_EQ(dtype_of_elem_type(TensorProto::DOUBLE), DType::kFloat);
  EXPECT_EQ(dtype_of_elem_type(TensorProto::INT32), DType::kInt64);
  EXPECT_EQ(dtype_of_elem_type(TensorProto::STRING), std::nullopt);
  EXPECT_EQ(dtype_of_elem_type(TensorProto::COMPLEX64), std::nullopt);
  EXPECT_EQ(dtype_of_elem_type(TensorProto::UNDEFINED), std::nullopt);
}

TensorProto typed(const std::string& name, int32_t type, Shape dims) {
  TensorProto t;
  t.set_name(name);
  t.set_data_type(type);
  for (int64_t d : dims) t.add_dims(d);
  return t;
}

TEST(OnnxProto, TypedFields) {
  TensorProto f = typed("f", TensorProto::FLOAT, {2});
  f.add_float_data(0.5f);
  f.add_float_data(-3.f);
  expect_same(tensor_to_constant(f), float_value({2}, {0.5f, -3.f}));

  TensorProto d = typed("d", TensorProto::DOUBLE, {1, 2});
  d.add_double_data(0.25);
  d.add_double_data(1e10);
  expect_same(tensor_to_constant(d), float_value({1, 2}, {0.25f, 1e10f}));

  TensorProto i32 = typed("i32", TensorProto::INT32, {3});
  for (int v : {-5, 0, 2147483647}) i32.add_int32_data(v);
  expect_same(tensor_to_constant(i32), int_value(DType::kInt64, {3}, {-5, 0, 2147483647}));

  TensorProto i8 = typed("i8", TensorProto::INT8, {2});
  i8.add_int32_data(-128);
  i8.add_int32_data(127);
  expect_same(tensor_to_constant(i8), int_value(DType::kInt64, {2}, {-128, 127}));

  TensorProto u8 = typed("u8", TensorProto::UINT8, {1});
  u8.add_int32_data(255);
  expect_same(tensor_to_constant(u8), int_value(DType::kInt64, {1}, {255}));

  TensorProto i64 = typed("i64", TensorProto::INT64, {});
  i64.add_int64_data(-(int64_t{1} << 50));
  expect_same(tensor_to_constant(i64), int_value(DType::kInt64, {}, {-(int64_t{1} << 50)}));

  TensorProto u64 = typed("u64", TensorProto::UINT64, {1});
  u64.add_uint64_data(uint64_t{1} << 62);
  expect_same(tensor_to_constant(u64), int_value(DType::kInt64, {1}, {int64_t{1} << 62}));

  TensorProto b = typed("b", TensorProto::BOOL, {3});
  for (int v : {1, 0, 1}) b.add_int32_data(v);
  expect_same(tensor_to_constant(b), int_value(DType::kBool, {3}, {1, 0, 1}));

  // FLOAT16 bits in int32_data: 1.0, -2.0, 65504 (largest), 2^-24 (smallest subnormal), 0.
  TensorProto h = typed("h", TensorProto::FLOAT16, {5});
  for (int bits : {0x3C00, 0xC000, 0x7BFF, 0x0001, 0x0000}) h.add_int32_data(bits);
  expect_same(tensor_to_constant(h), half_value(DType::kFloat16, {5}, {1.f, -2.f, 65504.f, 0x1p-24f, 0.f}));
  TensorProto hinf = typed("hinf", TensorProto::FLOAT16, {2});
  hinf.add_int32_data(0xFC00);
  hinf.add_int32_data(0x7E00);
  const ConstantValue special = tensor_to_constant(hinf);
  EXPECT_EQ(special.real.data[0], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(special.real.data[1]));

  // BFLOAT16 is the top half of a float32: 0x3FC0 == 1.5, 0xC120 == -10.
  TensorProto bf = typed("bf", TensorProto::BFLOAT16, {2});
  bf.add_int32_data(0x3FC0);
  bf.add_int32_data(0xC120);
  expect_same(tensor_to_constant(bf), half_value(DType::kBFloat16, {2}, {1.5f, -10.f}));
  // Written back as the same 16-bit words (in raw_data).
  const TensorProto back = constant_to_tensor(tensor_to_constant(bf), "bf");
  EXPECT_EQ(back.data_type(), TensorProto::BFLOAT16);
  EXPECT_EQ(back.raw_data(), std::string("\xC0\x3F\x20\xC1", 4));
}

TEST(OnnxProto, RawDataOfNarrowTypes) {
  TensorProto h = typed("h", TensorProto::FLOAT16, {2});
  const uint16_t hb[2] = {0x3C00, 0xC000};
  h.set_raw_data(std::string(reinterpret_cast<const char*>(hb), sizeof hb));
  expect_same(tensor_to_constant(h), half_value(DType::kFloat16, {2}, {1.f, -2.f}));

  TensorProto i16 = typed("i16", TensorProto::INT16, {2});
  const int16_t ib[2] = {-300, 300};
  i16.set_raw_data(std::string(reinterpret_cast<const char*>(ib), sizeof ib));
  expect_same(tensor_to_constant(i16), int_value(DType::kInt64, {2}, {-300, 300}));

  TensorProto d = typed("d", TensorProto::DOUBLE, {1});
  const double db = -0.125;
  d.set_raw_data(std::string(reinterpret_cast<const char*>(&db), sizeof db));
  expect_same(tensor_to_constant(d), float_value({1}, {-0.125f}));

  TensorProto b = typed("b", TensorProto::BOOL, {3});
  b.set_raw_data(std::string("\x01\x00\x01", 3));
  expect_same(tensor_to_constant(b), int_value(DType::kBool, {3}, {1, 0, 1}));
}

TEST(OnnxProto, BadTensors) {
  TensorProto few = typed("too_few", TensorProto::FLOAT, {2, 2});
  for (float v : {1.f, 2.f, 3.f}) few.add_float_data(v);
  expect_error([&] { tensor_to_constant(few); }, "'too_few'");

  TensorProto raw = typed("bad_raw", TensorProto::INT64, {2});
  raw.set_raw_data(std::string(12, '\0'));
  expect_error([&] { tensor_to_constant(raw); }, "'bad_raw'");

  TensorProto s = typed("words", TensorProto::STRING, {1});
  s.add_string_data("hello");
  expect_error([&] { tensor_to_constant(s); }, "'words'");
  expect_error([&] { tensor_to_constant(s); }, "STRING");

  TensorProto c = typed("cplx", TensorProto::COMPLEX64, {1});
  c.add_float_data(1.f);
  c.add_float_data(2.f);
  expect_error([&] { tensor_to_constant(c); }, "COMPLEX64");

  TensorProto big = typed("big", TensorProto::UINT64, {1});
  big.add_uint64_data(~uint64_t{0});
  expect_error([&] { tensor_to_constant(big); }, "'big'");

  TensorProto neg = typed("neg", TensorProto::FLOAT, {-1});
  expect_error([&] { tensor_to_constant(neg); }, "'neg'");

  // Huge dims with no data fail on the size check, without allocating.
  TensorProto huge = typed("huge", TensorProto::FLOAT, {1 << 30, 1 << 30});
  expect_error([&] { tensor_to_constant(huge); }, "'huge'");
}

// A one-node model y = x + w whose initializer w is stored externally.
onnx::ModelProto external_model(const std::string& location, int64_t offset, int64_t length) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("ext");
  auto* node = g->add_node();
  node->set_op_type("Add");
  node->add_input("x");
  node->add_input("w");
  node->add_output("y");
  TensorProto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(TensorProto::FLOAT);
  w->add_dims(3);
  w->set_data_location(TensorProto::EXTERNAL);
  auto entry = [&](const std::string& k, const std::string& v) {
    auto* e = w->add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  entry("location", location);
  entry("offset", std::to_string(offset));
  entry("length", std::to_string(length));
  return m;
}

TEST(OnnxProto, ExternalData) {
  TempDir dir;
  const float w[3] = {1.f, -2.5f, 8.f};
  write_bytes(dir.file("weights.bin"),
              std::string("HEADER--") + std::string(reinterpret_cast<const char*>(w), sizeof w) + "TAIL");
  save_model(external_model("weights.bin", 8, 12), dir.file("m.onnx"));

  const onnx::ModelProto m = load_model(dir.file("m.onnx"));
  const TensorProto& init = m.graph().initializer(0);
  EXPECT_NE(init.data_location(), TensorProto::EXTERNAL);
  EXPECT_EQ(init.external_data_size(), 0);
  EXPECT_EQ(init.raw_data().size(), 12u);
  expect_same(tensor_to_constant(init), float_value({3}, {1.f, -2.5f, 8.f}));

  // Without load_model's help, external data is an error, not garbage.
  expect_error([&] { tensor_to_constant(external_model("weights.bin", 8, 12).graph().initializer(0)); }, "'w'");

  save_model(external_model("missing.bin", 0, 12), dir.file("missing.onnx"));
  expect_error([&] { load_model(dir.file("missing.onnx")); }, "missing.bin");

  save_model(external_model("weights.bin", 16, 12), dir.file("range.onnx"));
  expect_error([&] { load_model(dir.file("range.onnx")); }, "'w'");
  expect_error([&] { load_model(dir.file("range.onnx")); }, "weights.bin");

  save_model(external_model("../weights.bin", 0, 12), dir.file("escape.onnx"));
  expect_error([&] { load_model(dir.file("escape.onnx")); }, "outside");
}

TEST(OnnxProto, MalformedModels) {
  TempDir dir;
  const std::string missing = dir.file("nope.onnx");
  expect_error([&] { load_model(missing); }, missing);

  const std::string text = dir.file("text.onnx");
  write_bytes(text, "this is not a model\nat all\n");
  expect_error([&] { load_model(text); }, text);

  const std::string truncated = dir.file("truncated.onnx");
  write_bytes(truncated, read_prefix(kSqueeze, 1000));
  expect_error([&] { load_model(truncated); }, truncated);

  const std::string empty = dir.file("empty.onnx");
  write_bytes(empty, "");
  expect_error([&] { load_model(empty); }, empty);

  // A directory is not a model either.
  expect_error([&] { load_model(dir.file("")); }, "directory");

  // A valid tensor file is valid protobuf but no model.
  expect_error([&] { load_model(kData + "/models/squeezenet1_1-testdata/output_0.pb"); }, "not a valid ONNX model");

  // Tensor files: missing, empty, truncated.
  expect_error([&] { read_tensor_file(missing); }, missing);
  expect_error([&] { read_tensor_file(empty); }, empty);
  const std::string cut = dir.file("cut.pb");
  write_bytes(cut, read_prefix(kData + "/models/squeezenet1_1-testdata/output_0.pb", 500));
  expect_error([&] { read_tensor_file(cut); }, cut);
}

// protobuf readers used to stop at 64 MB by default; models are often larger.
TEST(OnnxProto, LoadsModelOver64MB) {
  TempDir dir;
  onnx::ModelProto m = external_model("unused", 0, 0);
  TensorProto* w = m.mutable_graph()->mutable_initializer(0);
  constexpr int64_t kCount = 20'000'000;  // 80 MB of float32
  std::vector<float> values(kCount);
  for (int64_t i = 0; i < kCount; ++i) values[static_cast<size_t>(i)] = static_cast<float>(i % 1000);
  *w = constant_to_tensor(float_value({kCount}, std::move(values)), "w");
  save_model(m, dir.file("big.onnx"));
  ASSERT_GT(fs::file_size(dir.file("big.onnx")), 64u << 20);

  const onnx::ModelProto back = load_model(dir.file("big.onnx"));
  const ConstantValue v = tensor_to_constant(back.graph().initializer(0));
  ASSERT_EQ(v.shape(), (Shape{kCount}));
  EXPECT_EQ(v.real.data[kCount - 1], 999.f);
}

// protobuf keeps fields a message type does not have (UnknownFieldSet: 16
// bytes an entry, 8 times a 2-byte field); parse_model and load_model walk
// the bytes first and refuse more than the byte limit of them, wherever they
// are (nested messages too, and known fields of the wrong wire type).
TEST(OnnxProto, UnknownFieldsCountInTheByteLimit) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("g");
  constexpr int kFields = 1000;
  for (int i = 0; i < kFields; ++i) g->GetReflection()->MutableUnknownFields(g)->AddVarint(30, 1);
  const std::string bytes = m.SerializeAsString();
  util::Limits limits;
  limits.max_bytes = 32 * kFields - 1;
  onnx::ModelProto back;
  expect_error([&] { parse_model(bytes, back, limits); },
               "1000 fields unknown to onnx.ModelProto and its messages (protobuf keeps them) would take 32000 bytes, "
               "more than the limit of 31999 (raise it with --max-bytes)");
  limits.max_bytes = 1'000'000;
  ASSERT_TRUE(parse_model(bytes, back, limits));
  EXPECT_EQ(back.graph().unknown_fields().field_count(), kFields);
  EXPECT_EQ(back.graph().name(), "g");

  // ir_version (field 1, a varint) written as a length-delimited field of 3 bytes.
  const std::string wrong_wire = bytes + std::string(
                                             "\x0a\x03"
                                             "abc",
                                             5);
  ASSERT_TRUE(parse_model(wrong_wire, back, limits));
  EXPECT_EQ(back.unknown_fields().field_count(), 1);
  limits.max_bytes = 32 * kFields + 32 + 48 + 4 - 1;
  expect_error([&] { parse_model(wrong_wire, back, limits); }, "1001 fields unknown");

  // Known fields cost more than their bytes too: an empty node (2 bytes) is
  // a NodeProto object.
  onnx::ModelProto nodes;
  nodes.set_ir_version(8);
  for (int i = 0; i < 100'000; ++i) nodes.mutable_graph()->add_node();
  limits.max_bytes = 1'000'000;
  expect_error([&] { parse_model(nodes.SerializeAsString(), back, limits); }, "parsed, its 100001 messages");
  limits.max_bytes = int64_t{1} << 30;
  ASSERT_TRUE(parse_model(nodes.SerializeAsString(), back, limits));
  EXPECT_EQ(back.graph().node_size(), 100'000);

  // The same through a file, and for a tensor file.
  TempDir dir;
  write_bytes(dir.file("m.onnx"), bytes);
  limits.max_bytes = 1000;
  expect_error([&] { load_model(dir.file("m.onnx"), nullptr, limits); }, dir.file("m.onnx"));
  TensorProto t = constant_to_tensor(float_value({2}, {1.f, 2.f}), "t");
  for (int i = 0; i < kFields; ++i) t.GetReflection()->MutableUnknownFields(&t)->AddVarint(100, 7);
  write_bytes(dir.file("t.pb"), t.SerializeAsString());
  expect_error([&] { read_tensor_file(dir.file("t.pb"), limits); }, "1000 fields unknown to onnx.TensorProto");
  EXPECT_EQ(read_tensor_file(dir.file("t.pb")).value.real.data[1], 2.f);
}

TEST(OnnxProto, SaveModel) {
  TempDir dir;
  const onnx::ModelProto m = load_model(kBert);
  const std::string path = dir.file("bert.onnx");
  save_model(m, path);
  const onnx::ModelProto back = load_model(path);
  EXPECT_EQ(back.SerializeAsString(), m.SerializeAsString());
  // Only the model remains: the temporary file was renamed, not left behind.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.file("")), fs::directory_iterator()), 1);

  expect_error([&] { save_model(m, dir.file("no/such/dir/m.onnx")); }, "no/such/dir");
  expect_error([&] { write_tensor_file(float_value({1}, {1.f}), "t", dir.file("no/t.pb")); }, "no/t.pb");
}

}  // namespace
}  // namespace tgr::onnx_io
