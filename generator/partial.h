// `generate --partial`: partially equivalent rules (PET). Runs the mutant
// generator (pet/mutants.h) over a set of small source programs and
// stores each mutant that the region checker finds partially equal as a rule
// of kind 'partial', status 'partial', with its region map and correction.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tgr::gen {

struct PartialSource {
  std::string label;    // e.g. "two convolutions"
  std::string program;  // text form, one to three operators
  std::string shapes;   // concrete shapes of its variables
};

// The built-in sources: convolution and pooling pairs (seams), a
// convolution and a pooling alone (borders), a strided convolution pair.
std::vector<PartialSource> default_partial_sources();

struct PartialOptions {
  std::string db;
  int max_ops = 3;    // operators in a mutant
  int trials = 2;     // random field inputs per tested position
  uint64_t seed = 1;
  bool progress = true;
  std::vector<PartialSource> sources = default_partial_sources();
};

struct PartialReport {
  int64_t run = 0;
  int64_t programs = 0, checked = 0, full = 0, partial = 0;
  int64_t inserted = 0;                      // new rules stored
  std::map<std::string, int64_t> by_kind;    // stored partial rules per kind
  double seconds = 0;
};

// The kind of a partial rule: what the mutant adds to the source
// ("concat+split seam", "pad border", "parameters"), for reports.
std::string partial_kind(const std::string& source_program, const std::string& mutant_program);

PartialReport generate_partial(const PartialOptions& options, const std::atomic<bool>& stop);

}  // namespace tgr::gen
