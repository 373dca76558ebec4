#include "pipeline/report.h"

#include <algorithm>
#include <cmath>

#include "util/report_number.h"

namespace tgr::pipeline {

using util::six_digits;

std::string OptimizeReport::stop_reason() const {
  if (searches.empty()) return "";
  return searches[searches.size() > 1 ? 1 : 0].result.stop_reason;
}

namespace {

nlohmann::ordered_json rules_applied_json(const OptimizeReport& r) {
  nlohmann::ordered_json applied = nlohmann::ordered_json::array();
  for (size_t i = 0; i < r.rules_applied.size(); ++i) {
    const optimizer::RuleUse& u = r.rules_applied[i];
    applied.push_back({{"id", u.id},
                       {"count", u.count},
                       {"rule", u.text},
                       {"rules_db", i < r.rules_applied_db.size() ? r.rules_applied_db[i] : r.options.rules_db}});
  }
  return applied;
}

nlohmann::ordered_json rewrites_json(const OptimizeReport& r) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const optimizer::AppliedRewrite& w : r.rewrites)
    out.push_back({{"rule", w.tag}, {"id", w.rule_id}, {"removed", w.removed}, {"added", w.added}});
  return out;
}

nlohmann::ordered_json rule_sets_json(const OptimizeReport& r) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  out.push_back({{"path", r.options.rules_db}, {"proved", r.rules.proved}, {"directions", r.rules.directions}});
  if (r.default_rules_added)
    out.push_back({{"path", r.options.default_rules_db},
                   {"proved", r.default_rules.proved},
                   {"directions", r.default_rules.directions}});
  return out;
}

// The one search's object, or with several one object of each by its key, and which was kept.
nlohmann::ordered_json search_json(const OptimizeReport& r) {
  if (r.searches.empty()) return nullptr;
  if (r.searches.size() == 1) return r.searches.front().result.report;
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const SearchRun& run : r.searches) out[run.key] = run.result.report;
  out["kept"] = r.kept;
  return out;
}

// The report's "conversion" (OptimizeOptions::convert); an error that is NaN is null.
nlohmann::ordered_json conversion_json(const OptimizeReport& r) {
  nlohmann::ordered_json errors = nlohmann::ordered_json::array();
  for (double e : r.conversion_errors)
    errors.push_back(std::isnan(e) ? nlohmann::ordered_json() : nlohmann::ordered_json(six_digits(e)));
  const optimizer::PrecisionConversion& c = *r.options.convert;
  return {{"to", std::string(dtype_name(c.to))},
          {"convert_io", c.convert_io},
          {"weights", r.conversion->weights},
          {"weight_elements", r.conversion->weight_elements},
          {"casts", r.conversion->casts},
          {"kept_float32", r.conversion->kept_float32},
          {"relative_l2_vs_float32", std::move(errors)}};
}

}  // namespace

nlohmann::ordered_json OptimizeReport::to_json() const {
  nlohmann::ordered_json json = {
      {"model", options.model},
      {"output", options.output},
      {"rules_db", options.rules_db},
      {"rule_sets", rule_sets_json(*this)},
      {"directions_that_can_match", rule_filter.kept},
      {"directions_unreachable", rule_filter.unreachable},
      {"target", std::string(optimizer::target_name(options.target.target))},
      {"cost_model", cost_model},
      {"operators_before", operators_before},
      {"operators_after", operators_after},
      {"cost_before_us", six_digits(cost_before_us)},
      {"cost_after_us", six_digits(cost_after_us)},
      {"cost_ratio", six_digits(cost_ratio())},
      {"min_gain", six_digits(options.min_gain)},
      {"below_min_gain", below_min_gain},
      {"measured", measured ? measured->to_json() : nlohmann::ordered_json(nullptr)},
      {"rules_applied", rules_applied_json(*this)},
      {"rewrites", rewrites_json(*this)},
      {"search", search_json(*this)},
      {"proofs",
       {{"proved", proofs.proved},
        {"failed", proofs.failed},
        {"cache_hits", proofs.cache_hits},
        {"replayed", proofs.replayed},
        {"corrected_partial", proofs.corrected},
        {"ms", six_digits(proofs.proof_ms)}}},
      {"folded_constant_nodes", fold.folded_nodes},
      {"opaque_nodes", opaque_nodes},
      {"seconds",
       {{"import", six_digits(import_seconds)},
        {"search", six_digits(search_seconds)},
        {"export", six_digits(export_seconds)}}},
  };
  if (conversion) json["conversion"] = conversion_json(*this);
  return json;
}

namespace {

void print_rules(std::FILE* out, const OptimizeReport& r) {
  const OptimizeOptions& o = r.options;
  std::fprintf(out, "  rules:          %d proved rules (%d directions) from %s", r.rules.proved, r.rules.directions,
               o.rules_db.c_str());
  if (r.rules.partial) std::fprintf(out, ", %d partial rules (applied with their corrections)", r.rules.partial);
  if (r.rules.skipped_partial)
    std::fprintf(out, "; %d partial rules without a correction skipped", r.rules.skipped_partial);
  if (r.default_rules_added)
    std::fprintf(out, "\n                  + %d proved rules (%d directions) shipped with tgr, from %s",
                 r.default_rules.proved, r.default_rules.directions, o.default_rules_db.c_str());
  std::fprintf(out, "\n                  %d directions can match this model (%d need an operator it cannot reach)",
               r.rule_filter.kept, r.rule_filter.unreachable);
  std::fprintf(out, "\n  operators:      %d -> %d", r.operators_before, r.operators_after);
  if (r.opaque_nodes) std::fprintf(out, " (%d opaque ONNX nodes kept as they are)", r.opaque_nodes);
  std::fprintf(out, "\n");
}

void print_rules_applied(std::FILE* out, const OptimizeReport& r) {
  std::fprintf(out, "  rules applied:  %zu distinct\n", r.rules_applied.size());
  for (size_t i = 0; i < r.rules_applied.size(); ++i) {
    const optimizer::RuleUse& u = r.rules_applied[i];
    const bool shipped = i < r.rules_applied_db.size() && r.rules_applied_db[i] != r.options.rules_db;
    std::fprintf(out, "    %s#%-6lld x%-3d %s\n", shipped ? "default" : "", static_cast<long long>(u.id), u.count,
                 u.text.c_str());
  }
}

void print_proofs(std::FILE* out, const optimizer::InstanceProofStats& proofs) {
  std::fprintf(out,
               "  proofs:         %lld instances proved at model shapes, %lld not proved (not applied), %lld cached, "
               "%.0f ms",
               static_cast<long long>(proofs.proved), static_cast<long long>(proofs.failed),
               static_cast<long long>(proofs.cache_hits), proofs.proof_ms);
  if (proofs.corrected)
    std::fprintf(out, "; %lld partial-rule instances corrected and region-checked",
                 static_cast<long long>(proofs.corrected));
  std::fprintf(out, "\n");
}

// The worst relative error of a conversion's outputs; NaN when any is NaN.
double worst_of(const std::vector<double>& errors) {
  double worst = 0;
  for (double e : errors) worst = std::isnan(e) || std::isnan(worst) ? NAN : std::max(worst, e);
  return worst;
}

void print_conversion(std::FILE* out, const OptimizeReport& r) {
  const optimizer::PrecisionConversion& c = *r.options.convert;
  const std::string to(dtype_name(c.to));
  std::fprintf(out,
               "  converted:      to %s: %d weights (%lld elements) rounded, %d casts added, %d operators kept in "
               "float32; inputs and outputs %s\n",
               to.c_str(), r.conversion->weights, static_cast<long long>(r.conversion->weight_elements),
               r.conversion->casts, r.conversion->kept_float32, c.convert_io ? to.c_str() : "float32");
  std::fprintf(out,
               "                  relative L2 error against the float32 model %.2e (worst output, random inputs)\n",
               worst_of(r.conversion_errors));
}

void print_output(std::FILE* out, const OptimizeReport& r) {
  const OptimizeOptions& o = r.options;
  if (r.measured) std::fprintf(out, "  measured:       %s\n", r.measured->summary().c_str());
  if (r.measured && !r.measured->keeps_rewrite())
    std::fprintf(out, "  output:         %s\n", r.measured->output_line().c_str());
  else if (r.below_min_gain)
    std::fprintf(out,
                 "  output:         the best graph found, predicted x%.3f, gains less than --min-gain %g; the model is "
                 "written unchanged\n",
                 r.cost_before_us > 0 ? r.below_min_gain_cost_us / r.cost_before_us : 1.0, o.min_gain);
  else if (r.unchanged) std::fprintf(out, "  output:         no rule applied; the model is written unchanged\n");
  else if (!r.conversion) std::fprintf(out, "  weights folded: %d constant operators\n", r.fold.folded_nodes);
  if (r.conversion) print_conversion(out, r);
  if (!o.calibration_dir.empty())
    std::fprintf(out, "  calibration:    %d one-node models of unmeasured signatures written to %s\n",
                 r.calibration_models, o.calibration_dir.c_str());
}

}  // namespace

void OptimizeReport::print_summary(std::FILE* out) const {
  const OptimizeOptions& o = options;
  std::fprintf(out, "optimize: %s -> %s\n", o.model.c_str(), o.output.c_str());
  print_rules(out, *this);
  std::fprintf(out, "  predicted cost: %.1f us -> %.1f us (x%.3f), target %s: %s\n", cost_before_us, cost_after_us,
               cost_ratio(), std::string(optimizer::target_name(o.target.target)).c_str(), cost_model.c_str());
  print_rules_applied(out, *this);
  for (const SearchRun& run : searches) std::fprintf(out, "  %-16s%s\n", run.label.c_str(), run.result.summary.c_str());
  if (!kept.empty()) std::fprintf(out, "  kept:           the graph of %s (the cheapest)\n", kept.c_str());
  print_proofs(out, proofs);
  print_output(out, *this);
  std::fprintf(out, "  time:           import %.2f s, search %.2f s, export %.2f s\n", import_seconds, search_seconds,
               export_seconds);
}

}  // namespace tgr::pipeline
