// The GPU tools' side of runtime/kernel_choices.h: the process's timed
// choices seeded from a database's kernel_choices table for this GPU and
// these library versions (before any model is loaded), and what this process
// timed stored back. calibrate does both; bench only reads, so that it runs
// each convolution as calibrate timed it. Built with CUDA only.
#pragma once

#include <string>

#include "rules_db/rules_db.h"
#include "runtime/cuda/device_info.h"
#include "runtime/kernel_choices.h"

namespace tgr::cli {

// The choices stored for this GPU; returns how many.
inline size_t seed_kernel_choices(const rules_db::RulesDb& db) {
  const auto stored = db.kernel_choices(gpu_device_name(), gpu_library_versions());
  KernelChoices::process().seed(stored);
  return stored.size();
}

// Stores the choices this process timed since the last call; returns how many.
inline size_t store_kernel_choices(rules_db::RulesDb& db) {
  const auto added = KernelChoices::process().take_added();
  db.put_kernel_choices(gpu_device_name(), gpu_library_versions(), added);
  return added.size();
}

}  // namespace tgr::cli
