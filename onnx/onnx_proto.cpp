#include "onnx/onnx_proto.h"

#include "ir/float_types.h"
#include "util/output_file.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/message.h>
#include <google/protobuf/wire_format_lite.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

namespace tgr::onnx_io {
namespace fs = std::filesystem;
using onnx::TensorProto;

// raw_data is little-endian; we copy it with memcpy.
static_assert(std::endian::native == std::endian::little, "raw_data decoding assumes a little-endian host");

namespace {

std::string in_quotes(const std::string& s) { return "'" + s + "'"; }
std::string tensor_label(const TensorProto& t) {
  return "tensor " + (t.name().empty() ? std::string("<unnamed>") : in_quotes(t.name()));
}
std::string type_name(int32_t elem_type) {
  return TensorProto::DataType_IsValid(elem_type)
             ? TensorProto::DataType_Name(static_cast<TensorProto::DataType>(elem_type))
             : "type " + std::to_string(elem_type);
}

// Opens `path` for reading, with a message that says why it cannot be.
std::ifstream open_input(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw OnnxError(in_quotes(path) + ": no such file");
  if (fs::is_directory(path, ec)) throw OnnxError(in_quotes(path) + ": is a directory, not a file");
  // A FIFO would block the read forever, a device never end.
  if (!fs::is_regular_file(path, ec))
    throw OnnxError(in_quotes(path) + ": is not a regular file (a FIFO, device or socket)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw OnnxError(in_quotes(path) + ": cannot open for reading");
  return in;
}

// Parses a whole file as one message. protobuf's default limit would reject
// messages over 64 MB in older versions; models are routinely larger, so the
// limit is raised to the format's own 2 GB ceiling.
bool parse_stream(google::protobuf::io::ZeroCopyInputStream& stream, google::protobuf::MessageLite& msg) {
  google::protobuf::io::CodedInputStream coded(&stream);
  coded.SetTotalBytesLimit(INT_MAX);
  return msg.ParseFromCodedStream(&coded) && coded.ConsumedEntireMessage();
}

// What protobuf's UnknownFieldSet holds for one unknown field: a 16-byte
// entry in a vector that doubles (32 bytes while it grows), plus, for a
// length-delimited field or a group, a heap object (a string of its bytes).
// A 2-byte field (a tag and a 1-byte varint) costs 8 to 16 times its size.
constexpr uint64_t kUnknownFieldEntryBytes = 32, kUnknownFieldObjectBytes = 48;

// What parsing one known field (`bytes`: what follows its tag) makes
// protobuf hold beyond the object that has the field: a string, a message
// object, a repeated number (twice its size while the array doubles; a
// packed run of 1-byte varints takes 8 times its bytes as int64).
uint64_t known_field_bytes(const google::protobuf::FieldDescriptor& field, bool packed, std::string_view bytes) {
  using google::protobuf::FieldDescriptor;
  switch (field.cpp_type()) {
    case FieldDescriptor::CPPTYPE_STRING:
      return 32 + bytes.size();
    case FieldDescriptor::CPPTYPE_MESSAGE:
      return 16 +
             google::protobuf::MessageFactory::generated_factory()->GetPrototype(field.message_type())->SpaceUsedLong();
    default:
      break;
  }
  if (!field.is_repeated()) return 0;  // inside its message's object
  const auto cpp = field.cpp_type();
  const uint64_t size = cpp == FieldDescriptor::CPPTYPE_BOOL ? 1
                        : cpp == FieldDescriptor::CPPTYPE_INT64 || cpp == FieldDescriptor::CPPTYPE_UINT64 ||
                                cpp == FieldDescriptor::CPPTYPE_DOUBLE
                            ? 8
                            : 4;
  if (!packed) return 2 * size;
  switch (field.type()) {  // fixed-size values: the array is sized once
    case FieldDescriptor::TYPE_FIXED32:
    case FieldDescriptor::TYPE_SFIXED32:
    case FieldDescriptor::TYPE_FLOAT:
    case FieldDescriptor::TYPE_FIXED64:
    case FieldDescriptor::TYPE_SFIXED64:
    case FieldDescriptor::TYPE_DOUBLE:
      return bytes.size();
    default:  // varints, each ending in a byte below 0x80
      return 2 * size * static_cast<uint64_t>(std::count_if(bytes.begin(), bytes.end(), [](char c) {
               return static_cast<unsigned char>(c) < 0x80;
             }));
  }
}

// Walks `bytes` as a message of type `type` without parsing it (an explicit
// stack of the messages entered) and adds up what protobuf's parse would
// allocate: the objects, strings and numbers of known fields
// (known_field_bytes) and the unknown fields (a field number the type does
// not have, or a known field with a wire type it cannot take). Refuses
// (OnnxError) when either passes limits.max_bytes: 8 MB of empty nodes
// took 760 MB, 16 MB of 2-byte unknown fields 160 MB. Malformed bytes end
// the walk: protobuf's parse then fails on them. Returns the total.
uint64_t check_parse_memory(std::string_view bytes, const google::protobuf::Descriptor& type,
                            const util::Limits& limits) {
  using google::protobuf::FieldDescriptor;
  using google::protobuf::internal::WireFormatLite;
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  in.SetTotalBytesLimit(INT_MAX);
  struct Frame {
    const google::protobuf::Descriptor* type;
    google::protobuf::io::CodedInputStream::Limit limit;
  };
  std::vector<Frame> stack{{&type, 0}};
  uint64_t unknown_fields = 0, unknown = 0, known = 0, messages = 0;
  constexpr size_t kMaxNesting = 100;  // protobuf's own recursion limit
  while (true) {
    const uint32_t tag = in.ReadTag();
    if (tag == 0) {  // the end of the message (or bytes that are not a tag)
      if (stack.size() == 1 || in.BytesUntilLimit() != 0) break;
      in.PopLimit(stack.back().limit);
      stack.pop_back();
      continue;
    }
    const auto wire = WireFormatLite::GetTagWireType(tag);
    const FieldDescriptor* field = stack.back().type->FindFieldByNumber(WireFormatLite::GetTagFieldNumber(tag));
    const bool packed = field && field->is_packable() && wire == WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
    const bool is_known =
        field &&
        (packed || wire == WireFormatLite::WireTypeForFieldType(static_cast<WireFormatLite::FieldType>(field->type())));
    const int start = in.CurrentPosition();
    if (is_known && field->type() == FieldDescriptor::TYPE_MESSAGE && stack.size() < kMaxNesting) {
      uint32_t length = 0;
      if (!in.ReadVarint32(&length)) break;
      ++messages;
      known += known_field_bytes(*field, false, {});
      stack.push_back({field->message_type(), in.PushLimit(static_cast<int>(length))});
      continue;
    }
    if (!WireFormatLite::SkipField(&in, tag)) break;
    const std::string_view skipped = bytes.substr(static_cast<size_t>(start), in.CurrentPosition() - start);
    if (is_known) {
      known += known_field_bytes(*field, packed, skipped);
      continue;
    }
    ++unknown_fields;
    unknown += kUnknownFieldEntryBytes;
    if (wire == WireFormatLite::WIRETYPE_LENGTH_DELIMITED || wire == WireFormatLite::WIRETYPE_START_GROUP)
      unknown += kUnknownFieldObjectBytes + skipped.size();
  }
  if (!util::within(static_cast<double>(unknown), limits.max_bytes))
    throw OnnxError(util::byte_limit_message(std::to_string(unknown_fields) + " fields unknown to " + type.full_name() +
                                                 " and its messages (protobuf keeps them)",
                                             static_cast<double>(unknown), limits));
  const double total = static_cast<double>(known) + static_cast<double>(unknown);
  if (!util::within(total, limits.max_bytes))
    throw OnnxError(util::byte_limit_message(
        "parsed, its " + std::to_string(messages) + " messages, their strings, numbers and unknown fields", total,
        limits));
  return static_cast<uint64_t>(total);
}

// A regular file is mapped and parsed in place, so each weight is copied once,
// from the page cache into its message (through an ifstream it was copied
// three times: BERT-base's 440 MB took a second). Before parsing, the bytes
// protobuf would hold for fields the message type does not know are
// checked against `limits` (check_parse_memory). Files over 2 GB, more
// than a message may be, are refused; other than regular files too
// (open_input).
bool parse_file(const std::string& path, google::protobuf::Message& msg, const util::Limits& limits) {
  std::ifstream in = open_input(path);  // its errors name the problem
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) throw OnnxError(in_quotes(path) + ": cannot read: " + ec.message());
  if (size > static_cast<uintmax_t>(INT_MAX))
    throw OnnxError(in_quotes(path) + ": " + std::to_string(size) +
                    " bytes, more than a protobuf message may be (2 GB; store large weights as external data)");
  if (size == 0) return msg.ParseFromString("");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  void* data = fd < 0 ? MAP_FAILED : ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
  if (fd >= 0) ::close(fd);  // the mapping keeps the file
  std::string read;          // the bytes, when the file cannot be mapped
  if (data == MAP_FAILED) {
    read.resize(size);
    if (!in.read(read.data(), static_cast<std::streamsize>(size))) throw OnnxError(in_quotes(path) + ": read error");
  }
  const std::string_view bytes =
      data != MAP_FAILED ? std::string_view(static_cast<const char*>(data), size) : std::string_view(read);
  try {
    check_parse_memory(bytes, *msg.GetDescriptor(), limits);
  } catch (const OnnxError& e) {
    if (data != MAP_FAILED) ::munmap(data, size);
    throw OnnxError(in_quotes(path) + ": " + e.what());
  }
  google::protobuf::io::ArrayInputStream array(bytes.data(), static_cast<int>(bytes.size()));
  const bool ok = parse_stream(array, msg);
  if (data != MAP_FAILED) ::munmap(data, size);
  return ok;
}

// Writes `msg` to `path` through a temporary file (write_atomically).
void write_file(const google::protobuf::MessageLite& msg, const std::string& path) {
  // Checked first so that the message says why; protobuf's own check would
  // only make the write below fail.
  if (msg.ByteSizeLong() > static_cast<size_t>(INT_MAX))
    throw OnnxError("cannot write " + in_quotes(path) + ": serialization failed (message over 2 GB)");
  // Serialized straight into the file: a model's bytes are not held twice
  // (a 440 MB string for BERT-base cost a second of page faults and copies).
  write_atomically(path, [&](std::ostream& out) { return msg.SerializeToOstream(&out); });
}

// The bytes of one element of an ONNX type; std::nullopt for STRING and others
// of no fixed size.
std::optional<uint64_t> element_bytes(int32_t elem_type);

// The bytes a tensor's dims and element type call for; std::nullopt for an
// element type of no fixed size (STRING) or dims that do not fit in 64 bits;
// OnnxError for a negative dimension.
std::optional<uint64_t> element_bytes(int32_t elem_type) {
  switch (elem_type) {
    case TensorProto::BOOL:
    case TensorProto::INT8:
    case TensorProto::UINT8:
      return 1;
    case TensorProto::FLOAT16:
    case TensorProto::BFLOAT16:
    case TensorProto::INT16:
    case TensorProto::UINT16:
      return 2;
    case TensorProto::FLOAT:
    case TensorProto::INT32:
    case TensorProto::UINT32:
      return 4;
    case TensorProto::DOUBLE:
    case TensorProto::INT64:
    case TensorProto::UINT64:
    case TensorProto::COMPLEX64:
      return 8;
    case TensorProto::COMPLEX128:
      return 16;
    default:
      return std::nullopt;
  }
}

std::optional<uint64_t> data_bytes(const TensorProto& t) {
  const std::optional<uint64_t> element = element_bytes(t.data_type());
  if (!element) return std::nullopt;
  uint64_t bytes = *element;
  for (int64_t d : t.dims()) {
    if (d < 0) throw OnnxError(tensor_label(t) + ": bad dims (negative)");
    if (d > 0 && bytes > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d)) return std::nullopt;
    bytes *= static_cast<uint64_t>(d);
  }
  return bytes;
}

// The external data of one model: the folder its files must lie in, the
// limits its tensors are read under and what has been read so far.
struct ExternalData {
  fs::path base_dir;
  util::Limits limits;
  uint64_t bytes = 0;  // read so far
  bool any = false;    // some tensor was external
};

// Moves a tensor's external data (a byte range of a file next to the model)
// into raw_data, after checking its dims against the element limit and its
// length against what the dims call for and against the byte limit.
void inline_external_data(TensorProto& t, ExternalData& external) {
  const fs::path& base_dir = external.base_dir;
  if (t.data_location() != TensorProto::EXTERNAL) return;
  std::string location;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
  for (const auto& entry : t.external_data()) {
    auto number = [&]() {
      uint64_t v = 0;
      const std::string& s = entry.value();
      auto [end, err] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (err != std::errc() || end != s.data() + s.size())
        throw OnnxError(tensor_label(t) + ": bad external data " + entry.key() + " " + in_quotes(s));
      return v;
    };
    if (entry.key() == "location") location = entry.value();
    else if (entry.key() == "offset") offset = number();
    else if (entry.key() == "length") length = number();
  }
  if (location.empty()) throw OnnxError(tensor_label(t) + ": external data without a location");
  // Like ONNX's checker: the data must lie inside the model's folder.
  const fs::path rel(location);
  if (rel.is_absolute() || std::find(rel.begin(), rel.end(), "..") != rel.end())
    throw OnnxError(tensor_label(t) + ": external data location " + in_quotes(location) +
                    " points outside the model's folder");
  const std::string file = (base_dir / rel).string();
  std::error_code ec;
  // A symbolic link inside the folder may point anywhere (w.bin ->
  // /etc/passwd): the resolved path must still lie inside the resolved folder,
  // as onnx.load requires, and be a regular file (not a device or a FIFO).
  const fs::path real_dir = fs::canonical(base_dir.empty() ? fs::path(".") : base_dir, ec);
  const fs::path real_file = ec ? fs::path() : fs::canonical(file, ec);
  if (ec)
    throw OnnxError(tensor_label(t) + ": cannot read external data file " + in_quotes(file) + ": " + ec.message());
  const auto [dir_end, file_at] = std::mismatch(real_dir.begin(), real_dir.end(), real_file.begin(), real_file.end());
  if (dir_end != real_dir.end() || file_at == real_file.end())
    throw OnnxError(tensor_label(t) + ": external data file " + in_quotes(file) + " resolves to " +
                    in_quotes(real_file.string()) + ", outside the model's folder " + in_quotes(real_dir.string()));
  if (!fs::is_regular_file(real_file, ec))
    throw OnnxError(tensor_label(t) + ": external data file " + in_quotes(file) + " is not a regular file");
  const uint64_t size = fs::file_size(real_file, ec);
  if (ec) throw OnnxError(tensor_label(t) + ": cannot read external data file " + in_quotes(file) + ": " + ec.message());
  if (offset > size || (length && *length > size - offset))
    throw OnnxError(tensor_label(t) + ": external data range (offset " + std::to_string(offset) + ", length " +
                    (length ? std::to_string(*length) : std::string("rest")) + ") lies beyond the end of " +
                    in_quotes(file) + " (" + std::to_string(size) + " bytes)");
  const uint64_t n = length.value_or(size - offset);
  // Checked before reading: a 1x4 tensor over a 3 GB file must not cost 3 GB.
  if (const std::optional<uint64_t> expected = data_bytes(t); expected && n != *expected)
    throw OnnxError(tensor_label(t) + ": external data of " + std::to_string(n) + " bytes in " + in_quotes(file) +
                    ", " + std::to_string(*expected) + " expected for its dims and " + type_name(t.data_type()));
  double count = 1;
  for (int64_t d : t.dims()) count *= static_cast<double>(d);
  if (!util::within(count, external.limits.max_elements))
    throw OnnxError(util::element_limit_message(tensor_label(t), count, external.limits));
  if (!util::within(static_cast<double>(external.bytes) + static_cast<double>(n), external.limits.max_bytes))
    throw OnnxError(util::byte_limit_message(tensor_label(t) + ": the model's external data",
                                             static_cast<double>(external.bytes) + static_cast<double>(n),
                                             external.limits));
  external.bytes += n;
  std::string bytes(n, '\0');
  std::ifstream in(real_file, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(bytes.data(), static_cast<std::streamsize>(n));
  if (!in) throw OnnxError(tensor_label(t) + ": read error in external data file " + in_quotes(file));
  t.set_raw_data(std::move(bytes));
  t.clear_external_data();
  t.set_data_location(TensorProto::DEFAULT);
  external.any = true;
}

void inline_external_data(onnx::GraphProto& g, ExternalData& external);

// The tensors of a node's attributes, and of the subgraphs in them (If's
// branches, Loop's body): an exported model lives in another folder, where
// a relative location would no longer find its file.
void inline_external_data(onnx::NodeProto& node, ExternalData& external) {
  for (auto& attr : *node.mutable_attribute()) {
    if (attr.has_t()) inline_external_data(*attr.mutable_t(), external);
    for (auto& t : *attr.mutable_tensors()) inline_external_data(t, external);
    if (attr.has_g()) inline_external_data(*attr.mutable_g(), external);
    for (auto& sub : *attr.mutable_graphs()) inline_external_data(sub, external);
  }
}

void inline_external_data(onnx::GraphProto& g, ExternalData& external) {
  for (auto& t : *g.mutable_initializer()) inline_external_data(t, external);
  for (auto& node : *g.mutable_node()) inline_external_data(node, external);  // e.g. Constant's `value`
}

// The `count` elements of `t` as C type Raw: from raw_data when present,
// otherwise from the typed repeated field ONNX stores this type in.
template <class Raw, class Field>
std::vector<Raw> elements(const TensorProto& t, int64_t count, const Field& field) {
  // Sizes are checked before allocating: the dims of a corrupt file may be huge.
  const auto n = static_cast<size_t>(count);
  if (t.has_raw_data()) {
    const std::string& raw = t.raw_data();
    if (raw.size() != n * sizeof(Raw))
      throw OnnxError(tensor_label(t) + ": raw_data has " + std::to_string(raw.size()) + " bytes, " +
                      std::to_string(n * sizeof(Raw)) + " expected for " + std::to_string(count) + " " +
                      type_name(t.data_type()) + " values");
    std::vector<Raw> out(n);
    if (n > 0) std::memcpy(out.data(), raw.data(), raw.size());  // an empty vector's data() may be null
    return out;
  }
  if (static_cast<size_t>(field.size()) != n)
    throw OnnxError(tensor_label(t) + ": has " + std::to_string(field.size()) + " values, " +
                    std::to_string(count) + " expected from its dims");
  // int32_data holds the bits of narrower types (int8, uint16, float16, ...).
  std::vector<Raw> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<Raw>(field[static_cast<int>(i)]);
  return out;
}

template <class Raw, class Fn>
std::vector<float> to_floats(const std::vector<Raw>& in, Fn convert) {
  std::vector<float> out(in.size());
  for (size_t i = 0; i < in.size(); ++i) out[i] = convert(in[i]);
  return out;
}

template <class Raw>
std::vector<int64_t> to_ints(const TensorProto& t, const std::vector<Raw>& in) {
  std::vector<int64_t> out(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if constexpr (std::is_same_v<Raw, uint64_t>)
      if (in[i] > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        throw OnnxError(tensor_label(t) + ": UINT64 value " + std::to_string(in[i]) + " does not fit in int64");
    out[i] = static_cast<int64_t>(in[i]);
  }
  return out;
}

}  // namespace

bool parse_model(std::string_view bytes, onnx::ModelProto& model, const util::Limits& limits) {
  if (bytes.size() > static_cast<size_t>(INT_MAX)) return false;
  check_parse_memory(bytes, *model.GetDescriptor(), limits);
  google::protobuf::io::ArrayInputStream array(bytes.data(), static_cast<int>(bytes.size()));
  return parse_stream(array, model);
}

onnx::ModelProto load_model(const std::string& path, bool* had_external_data, const util::Limits& limits) {
  onnx::ModelProto model;
  const std::string invalid = in_quotes(path) + " is not a valid ONNX model";
  // Many byte strings (text, empty files) are valid protobuf; no graph or no
  // ir_version is what tells them apart from a model.
  if (!parse_file(path, model, limits)) throw OnnxError(invalid + " (protobuf parse failed: truncated or not ONNX)");
  if (!model.has_graph()) throw OnnxError(invalid + " (no graph)");
  if (model.ir_version() <= 0) throw OnnxError(invalid + " (no ir_version)");
  try {
    ExternalData external{fs::path(path).parent_path(), limits};
    inline_external_data(*model.mutable_graph(), external);
    for (auto& function : *model.mutable_functions())
      for (auto& node : *function.mutable_node()) inline_external_data(node, external);
    if (had_external_data) *had_external_data = external.any;
  } catch (const OnnxError& e) {
    throw OnnxError(in_quotes(path) + ": " + e.what());
  }
  return model;
}

void save_model(const onnx::ModelProto& model, const std::string& path) { write_file(model, path); }

void write_atomically(const std::string& path, const std::function<bool(std::ostream&)>& write) {
  try {
    util::write_atomically(path, write);
  } catch (const util::OutputFileError& e) {
    throw OnnxError(e.what());
  }
}

int64_t default_opset(const onnx::ModelProto& model) {
  for (const auto& op : model.opset_import())
    if (op.domain().empty() || op.domain() == "ai.onnx") return op.version();
  throw OnnxError("model" + (model.graph().name().empty() ? "" : " " + in_quotes(model.graph().name())) +
                  " imports no opset of the default domain (\"\" or \"ai.onnx\")");
}

std::vector<std::string> graph_input_names(const onnx::ModelProto& model) {
  std::set<std::string> initializers;
  for (const auto& t : model.graph().initializer()) initializers.insert(t.name());
  std::vector<std::string> names;
  for (const auto& in : model.graph().input())
    if (!initializers.count(in.name())) names.push_back(in.name());
  return names;
}

ConstantValue tensor_to_constant(const TensorProto& t) {
  if (t.data_location() == TensorProto::EXTERNAL)
    throw OnnxError(tensor_label(t) + ": data is external (load the model with load_model)");
  if (t.has_segment()) throw OnnxError(tensor_label(t) + ": segmented tensors are not supported");
  Shape shape;
  int64_t count = 1;
  for (int64_t d : t.dims()) {
    // The bound keeps count * sizeof(element) from overflowing.
    if (d < 0 || (d > 0 && count > std::numeric_limits<int64_t>::max() / 8 / d))
      throw OnnxError(tensor_label(t) + ": bad dims (negative or too many elements)");
    shape.push_back(d);
    count *= d;
  }
  auto real = [&](std::vector<float> v) { return ConstantValue(Tensor<float>(shape, std::move(v))); };
  auto ints = [&](DType dt, std::vector<int64_t> v) { return ConstantValue(dt, Tensor<int64_t>(shape, std::move(v))); };
  auto same = [](auto x) { return static_cast<float>(x); };
  auto typed = [](DType dt, ConstantValue v) {
    v.dtype = dt;
    return v;
  };
  switch (t.data_type()) {
    case TensorProto::FLOAT: return real(elements<float>(t, count, t.float_data()));
    case TensorProto::DOUBLE: return real(to_floats(elements<double>(t, count, t.double_data()), same));
    case TensorProto::FLOAT16:
      return typed(DType::kFloat16, real(to_floats(elements<uint16_t>(t, count, t.int32_data()), float16_value)));
    case TensorProto::BFLOAT16:
      return typed(DType::kBFloat16, real(to_floats(elements<uint16_t>(t, count, t.int32_data()), bfloat16_value)));
    case TensorProto::INT64: return ints(DType::kInt64, elements<int64_t>(t, count, t.int64_data()));
    case TensorProto::INT32: return ints(DType::kInt64, to_ints(t, elements<int32_t>(t, count, t.int32_data())));
    case TensorProto::INT16: return ints(DType::kInt64, to_ints(t, elements<int16_t>(t, count, t.int32_data())));
    case TensorProto::INT8: return ints(DType::kInt64, to_ints(t, elements<int8_t>(t, count, t.int32_data())));
    case TensorProto::UINT8: return ints(DType::kInt64, to_ints(t, elements<uint8_t>(t, count, t.int32_data())));
    case TensorProto::UINT16: return ints(DType::kInt64, to_ints(t, elements<uint16_t>(t, count, t.int32_data())));
    case TensorProto::UINT32: return ints(DType::kInt64, to_ints(t, elements<uint32_t>(t, count, t.uint64_data())));
    case TensorProto::UINT64: return ints(DType::kInt64, to_ints(t, elements<uint64_t>(t, count, t.uint64_data())));
    case TensorProto::BOOL: {
      std::vector<int64_t> v = to_ints(t, elements<uint8_t>(t, count, t.int32_data()));
      for (int64_t& b : v) b = b != 0;
      return ints(DType::kBool, std::move(v));
    }
    default: throw OnnxError(tensor_label(t) + ": element type " + type_name(t.data_type()) + " is not supported");
  }
}

TensorProto constant_to_tensor(const ConstantValue& value, const std::string& name) {
  TensorProto t;
  t.set_name(name);
  for (int64_t d : value.shape()) t.add_dims(d);
  t.set_data_type(onnx_elem_type(value.dtype));
  const size_t n = static_cast<size_t>(num_elements(value.shape()));
  const size_t have = value.is_float() ? value.real.data.size() : value.ints.data.size();
  if (have != n)
    throw OnnxError(tensor_label(t) + ": " + std::to_string(have) + " values for shape " +
                    shape_to_string(value.shape()));
  std::string* raw = t.mutable_raw_data();
  if (value.dtype == DType::kFloat16 || value.dtype == DType::kBFloat16) {
    // Little-endian 16-bit words, as ONNX's raw_data stores them.
    raw->resize(2 * n);
    for (size_t i = 0; i < n; ++i) {
      const uint16_t bits = half_bits(value.dtype, value.real.data[i]);
      (*raw)[2 * i] = static_cast<char>(bits & 0xff);
      (*raw)[2 * i + 1] = static_cast<char>(bits >> 8);
    }
  } else if (value.dtype == DType::kFloat) {
    raw->assign(reinterpret_cast<const char*>(value.real.data.data()), n * sizeof(float));
  } else if (value.dtype == DType::kInt64) {
    raw->assign(reinterpret_cast<const char*>(value.ints.data.data()), n * sizeof(int64_t));
  } else {
    raw->resize(n);
    for (size_t i = 0; i < n; ++i) (*raw)[i] = value.ints.data[i] != 0 ? 1 : 0;
  }
  return t;
}

NamedTensor read_tensor_file(const std::string& path, const util::Limits& limits) {
  TensorProto t;
  // An empty or random file often parses; a tensor without a type is not one.
  if (!parse_file(path, t, limits) || t.data_type() == TensorProto::UNDEFINED)
    throw OnnxError(in_quotes(path) + " is not a valid ONNX tensor file (protobuf parse failed or no data type)");
  try {
    ExternalData external{fs::path(path).parent_path(), limits};
    inline_external_data(t, external);
    return {t.name(), tensor_to_constant(t)};
  } catch (const OnnxError& e) {
    throw OnnxError(in_quotes(path) + ": " + e.what());
  }
}

void write_tensor_file(const ConstantValue& value, const std::string& name, const std::string& path) {
  write_file(constant_to_tensor(value, name), path);
}

int32_t onnx_elem_type(DType t) {
  switch (t) {
    case DType::kFloat: return TensorProto::FLOAT;
    case DType::kInt64: return TensorProto::INT64;
    case DType::kBool: return TensorProto::BOOL;
    case DType::kFloat16:
      return TensorProto::FLOAT16;
    case DType::kBFloat16:
      return TensorProto::BFLOAT16;
  }
  throw OnnxError("unknown DType");
}

std::optional<DType> dtype_of_elem_type(int32_t elem_type) {
  switch (elem_type) {
    case TensorProto::FLOAT:
    case TensorProto::DOUBLE:
      return DType::kFloat;
    case TensorProto::FLOAT16:
      return DType::kFloat16;
    case TensorProto::BFLOAT16:
      return DType::kBFloat16;
    case TensorProto::INT64:
    case TensorProto::INT32:
    case TensorProto::INT16:
    case TensorProto::INT8:
    case TensorProto::UINT8:
    case TensorProto::UINT16:
    case TensorProto::UINT32:
    case TensorProto::UINT64: return DType::kInt64;
    case TensorProto::BOOL: return DType::kBool;
    default: return std::nullopt;
  }
}

}  // namespace tgr::onnx_io
