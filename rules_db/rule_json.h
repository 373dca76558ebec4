// A rule of the database as JSON, every column: `rules list --format json`
// prints it, and the Python package's RulesDB returns it.
#pragma once

#include <nlohmann/json.hpp>

#include "rules_db/rules_db.h"

namespace tgr::rules_db {

// Keys in the order of the columns; absent optional columns (and a proof
// time that is not finite) are null.
nlohmann::ordered_json rule_json(const RuleRecord& r);

}  // namespace tgr::rules_db
