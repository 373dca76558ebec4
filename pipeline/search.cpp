#include "pipeline/search.h"

#include <stdexcept>

namespace tgr::pipeline {

const std::vector<SearchInfo>& searches() {
  static const std::vector<SearchInfo> all = {
      {Search::kBacktrack, "backtrack", "TASO"},
      {Search::kSaturate, "saturate", "equality saturation, ILP extraction"},
      {Search::kBoth, "both",
       "saturate, then backtrack from its graph, and backtrack from the model; the cheapest kept; each with "
       "--timeout"},
  };
  return all;
}

std::string_view search_name(Search search) {
  for (const SearchInfo& s : searches())
    if (s.search == search) return s.name;
  throw std::logic_error("a search missing from searches()");
}

Search parse_search(std::string_view name) {
  std::string names;  // "backtrack, saturate or both"
  const std::vector<SearchInfo>& all = searches();
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i].name == name) return all[i].search;
    names += i == 0 ? "" : i + 1 == all.size() ? " or " : ", ";
    names += all[i].name;
  }
  throw std::invalid_argument("search '" + std::string(name) + "': expected " + names);
}

SearchResult backtracking_stats(const optimizer::BacktrackingStats& stats,
                                const optimizer::BacktrackingOptions& options, const char* from) {
  SearchResult out;
  out.stop_reason = optimizer::stop_reason_name(stats);
  out.summary = optimizer::summary_line(stats, options, from);
  out.report = optimizer::stats_json(stats, options);
  return out;
}

SearchResult backtracking_result(optimizer::BacktrackingResult&& r, const optimizer::BacktrackingOptions& options,
                                 const char* from) {
  SearchResult out = backtracking_stats(r.stats, options, from);
  move_outcome(out, std::move(r));
  return out;
}

SearchResult saturation_result(saturation::SaturationResult&& r) {
  SearchResult out;
  move_outcome(out, std::move(r));
  out.stop_reason = saturation::stop_reason_name(r.stats.runner.stop);
  out.summary = saturation::summary_line(r.stats);
  out.report = saturation::stats_json(r.stats);
  return out;
}

}  // namespace tgr::pipeline
