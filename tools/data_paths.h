// Where the programs find their data files: the operator axioms (specs/)
// and the default rules database. An installed tree (`cmake --install`) has
// them in PREFIX/share/tgr/, found relative to the executable (PREFIX/bin/),
// so a prefix can be moved; a build tree uses the paths CMake compiled in
// (the source tree's specs/ and build/default_rules.db).
#pragma once

#include <filesystem>
#include <string>
#include <system_error>

#ifndef TGR_SPECS_DIR
#define TGR_SPECS_DIR "specs"
#endif
#ifndef TGR_DEFAULT_RULES
#define TGR_DEFAULT_RULES "default_rules.db"
#endif
#ifndef TGR_MEASURE_ORT_SCRIPT
#define TGR_MEASURE_ORT_SCRIPT "measure_ort.py"
#endif

namespace tgr::cli {

// PREFIX/share/tgr for an executable in PREFIX/bin; "" when the executable's
// path is unknown.
inline std::filesystem::path installed_data_dir() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec || exe.empty()) return {};
  return exe.parent_path().parent_path() / "share" / "tgr";
}

// `name` under the installed data folder when it is there, else `build_path`.
inline std::string data_path(const char* name, const char* build_path) {
  const std::filesystem::path dir = installed_data_dir();
  std::error_code ec;
  if (!dir.empty() && std::filesystem::exists(dir / name, ec)) return (dir / name).string();
  return build_path;
}

// The operator axioms: PREFIX/share/tgr/specs, or the source tree's specs/.
inline std::string default_specs_dir() { return data_path("specs", TGR_SPECS_DIR); }

// The default rules database: PREFIX/share/tgr/default_rules.db, or build/default_rules.db.
inline std::string default_rules_db() { return data_path("default_rules.db", TGR_DEFAULT_RULES); }

// The script optimize times rewrites in ONNX Runtime with:
// PREFIX/share/tgr/measure_ort.py, or the source tree's tools/measure_ort.py.
inline std::string measure_ort_script() { return data_path("measure_ort.py", TGR_MEASURE_ORT_SCRIPT); }

// A program installed next to this one (PREFIX/bin/NAME); "" when this
// executable's path is unknown.
inline std::string sibling_program(const char* name) {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec || exe.empty() ? std::string() : (exe.parent_path() / name).string();
}

}  // namespace tgr::cli
