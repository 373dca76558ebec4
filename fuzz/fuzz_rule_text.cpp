// libFuzzer target: the text parsers. The first byte picks one: a rule (as
// `rules lookup` and `rules import` read it: canonical form and record), a
// graph file (`run --graph`), or an axiom file (`verify --check-axioms`,
// `optimize --specs`). Exceptions are refusals; crashes and hangs are bugs.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string_view>

#include "ir/canonical.h"
#include "ir/text.h"
#include "rules_db/rules_db.h"
#include "verifier/axioms.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0] % 3) {
      case 0: {
        const tgr::rules_db::RuleRecord r = tgr::rules_db::rule_record_from_text(text);
        (void)tgr::canonical_rule_text(r.canonical);  // the canonical form reads back
        break;
      }
      case 1:
        (void)tgr::parse_graph_file(text);
        break;
      default:
        (void)tgr::axioms::parse_axioms(text, "fuzz.axioms");
        break;
    }
  } catch (const std::exception&) {
  }
  return 0;
}
