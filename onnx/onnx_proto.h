// The ONNX protobuf layer: reading and writing model files and single-tensor
// files, and converting TensorProto <-> ConstantValue. Everything above this
// layer (the importer, the exporter) works on parsed protos and never sees
// bytes, external data or the many ONNX element types.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ir/tensor.h"
#include "util/limits.h"

namespace tgr::onnx_io {

// Raised for every failure of this layer; the message names the file or
// tensor and the problem.
class OnnxError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Loads a model file (any size protobuf accepts, i.e. up to 2 GB). Tensors
// stored as external data (initializers and tensor attributes of every
// graph's nodes: the main graph, the subgraphs in attributes, model-local
// functions) are read from files relative to the model's folder into
// raw_data, so callers never see external data.
// `had_external_data`, when given, says whether any tensor was external.
// `limits` (util/limits.h) bound, before anything is read or allocated, each
// external tensor's elements, and the bytes of all external data together
// with what protobuf keeps of fields the ONNX format does not have (up to 16
// times their size: a file of 2-byte unknown fields); beyond them, OnnxError
// naming the file.
onnx::ModelProto load_model(const std::string& path, bool* had_external_data = nullptr,
                            const util::Limits& limits = {});

// Parses the bytes of a model (as load_model does a file's, without its
// external data) into `model`; false when protobuf cannot, OnnxError when
// its unknown fields pass `limits` (checked before parsing).
bool parse_model(std::string_view bytes, onnx::ModelProto& model, const util::Limits& limits = {});

// Writes a model through a temporary file in the same folder and a rename, so
// a failure never leaves a half-written file at `path`.
void save_model(const onnx::ModelProto& model, const std::string& path);

// What save_model does with the bytes `write` puts into the stream (it
// returns false on failure): util::write_atomically (util/output_file.h: a
// temporary file renamed over a regular file, a device written in place);
// OnnxError naming `path` on any failure.
void write_atomically(const std::string& path, const std::function<bool(std::ostream&)>& write);

// The opset version of the default domain ("" or "ai.onnx").
int64_t default_opset(const onnx::ModelProto& model);

// The model's real inputs (graph inputs that are not initializers), in order.
std::vector<std::string> graph_input_names(const onnx::ModelProto& model);

// FLOAT, DOUBLE -> kFloat (float32); FLOAT16 -> kFloat16, BFLOAT16 ->
// kBFloat16 (their values exactly, as float32 numbers); INT8..INT64 and
// UINT8..UINT64 -> kInt64 (UINT64 values beyond int64 raise); BOOL -> kBool.
// Reads raw_data (little-endian) or the typed repeated fields. Other types, or
// a data size that does not match the dims, raise OnnxError naming the tensor.
ConstantValue tensor_to_constant(const onnx::TensorProto& t);

// FLOAT / FLOAT16 / BFLOAT16 / INT64 / BOOL tensor with the data in raw_data
// (half types as their 16-bit words, so a half constant is written back bit for bit).
onnx::TensorProto constant_to_tensor(const ConstantValue& value, const std::string& name);

// Single TensorProto files, the layout of ONNX test data sets (input_0.pb).
struct NamedTensor {
  std::string name;
  ConstantValue value;
};
// `limits`: as load_model's.
NamedTensor read_tensor_file(const std::string& path, const util::Limits& limits = {});
void write_tensor_file(const ConstantValue& value, const std::string& name, const std::string& path);

// ONNX element type (TensorProto::DataType) of an ir DType: FLOAT, INT64, BOOL, FLOAT16, BFLOAT16.
int32_t onnx_elem_type(DType t);

// The DType that tensor_to_constant gives for `elem_type` (so DOUBLE -> kFloat,
// INT32 -> kInt64); std::nullopt for types it rejects (STRING, COMPLEX*, ...).
// onnx_elem_type(*d) == elem_type tells whether the mapping is exact.
std::optional<DType> dtype_of_elem_type(int32_t elem_type);

}  // namespace tgr::onnx_io
