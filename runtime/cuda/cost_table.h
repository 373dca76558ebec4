// The measured-cost table, isolated here until the optimizer's own pieces
// are merged (issue 7): the operator signature and the SQLite table
// op_costs(device, signature, ms, measured_at) of the rules database.
//
// MERGE NOTE: op_signature() produces the same text as the optimizer
// branch's ir/op_signature.h ("conv2d[pad=same,stride=2x2](float:1x3x224x224,
// float:64x3x3x3)"), and CostTable reads and writes the same table as its
// RulesDb::put_op_cost / the cost model's loader. At merge, replace the body
// of this file's functions with calls to those (or delete this file and
// switch tools/calibrate.cpp to them); nothing else depends on it. Plain C++
// (no CUDA): it builds and is tested everywhere.
#pragma once

#include <optional>
#include <string>

#include "ir/graph.h"

struct sqlite3;

namespace tgr {

// Operator, parameters that differ from their defaults, input types and shapes.
std::string op_signature(const Graph& graph, const Node& node);

class CostTable {
 public:
  // Opens (creating the file and the table when absent) the database at `path`.
  explicit CostTable(const std::string& path);
  ~CostTable();
  CostTable(const CostTable&) = delete;
  CostTable& operator=(const CostTable&) = delete;

  std::optional<double> lookup(const std::string& device, const std::string& signature) const;
  void store(const std::string& device, const std::string& signature, double ms);
  int count(const std::string& device) const;

 private:
  sqlite3* db_ = nullptr;
};

}  // namespace tgr
