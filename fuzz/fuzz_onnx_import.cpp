// libFuzzer target: the ONNX importer (and the exporter on what it imports)
// on arbitrary bytes read as a ModelProto. Any exception is a refusal, which
// is fine; a crash, a sanitizer report, a hang or unbounded memory is a bug.
#include <cstddef>
#include <cstdint>
#include <exception>

#include "onnx/onnx_export.h"
#include "onnx/onnx_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tgr::onnx_io::ImportOptions options;
  // Small limits: the fuzzer should find the paths around them, not spend
  // its time filling a gigabyte that the default limit allows.
  options.limits.max_elements = int64_t{1} << 16;
  options.limits.max_bytes = int64_t{1} << 22;
  options.keep_unsupported = size % 2 == 0;
  try {
    // As load_model reads a file: unknown fields walked and bounded first.
    onnx::ModelProto model;
    if (!tgr::onnx_io::parse_model(std::string_view(reinterpret_cast<const char*>(data), size), model, options.limits))
      return 0;
    const tgr::onnx_io::ImportedModel imported = tgr::onnx_io::import_model(model, options);
    tgr::onnx_io::ExportOptions export_options;
    export_options.opset = imported.opset;
    export_options.functions = imported.functions;  // as optimize writes them back
    export_options.domain_opsets = imported.domain_opsets;
    export_options.overridable_initializers = imported.overridable_initializers;
    (void)tgr::onnx_io::export_graph(imported.graph, export_options);
  } catch (const std::exception&) {
  }
  return 0;
}
