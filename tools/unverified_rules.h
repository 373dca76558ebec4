// optimize uses proved rules only: a database straight from `generate` holds
// candidates nobody verified, and optimizing with it finds "0 proved rules".
// These warnings name how many there are and the command that proves them.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "rules_db/rules_db.h"

namespace tgr::cli {

// One warning per database (of `paths`, "" skipped, each once) that holds
// rules of status 'candidate'.
inline std::vector<std::string> unverified_rule_warnings(const std::vector<std::string>& paths) {
  std::vector<std::string> warnings;
  std::vector<std::string> seen;
  for (const std::string& path : paths) {
    if (path.empty() || std::find(seen.begin(), seen.end(), path) != seen.end()) continue;
    seen.push_back(path);
    const rules_db::RulesDb db = rules_db::RulesDb::open_read_only(path);
    for (const auto& [status, n] : db.counts_by_status())
      if (status == "candidate" && n > 0)
        warnings.push_back(std::to_string(n) + " rules of '" + path +
                           "' were never verified (status candidate) and are not used; prove them with: verify --db " +
                           path);
  }
  return warnings;
}

}  // namespace tgr::cli
