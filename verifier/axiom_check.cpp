// Validation of axioms: each admitted instance's two sides evaluated with the
// float64 interpreter on random inputs and compared.
#include <tbb/parallel_for.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <mutex>

#include "runtime/interpreter.h"
#include "ir/hash.h"
#include "verifier/axioms.h"
#include "verifier/side_comparison.h"

namespace tgr::axioms {

namespace {


}  // namespace

std::optional<Failure> check_instance(const Axiom& axiom, const Instance& instance, uint64_t seed, double rtol,
                                      double* max_error) {
  Failure f;
  f.instance = instance;
  Rule rule;
  try {
    rule = build_instance(axiom, instance);
  } catch (const std::exception& e) {
    f.what = std::string("cannot build the instance: ") + e.what();
    return f;
  }
  // Random inputs, one independent tensor per variable; value conditions shape them.
  std::vector<Tensor<double>> inputs;
  for (size_t i = 0; i < axiom.variables.size(); ++i) {
    const Variable& v = axiom.variables[i];
    Tensor<double> t = random_tensor<double>(instance.shapes.at(v.name), splitmix64(seed + 0x1000 * (i + 1)));
    for (const Condition& c : axiom.conditions) {
      if (c.var != v.name) continue;
      if (c.kind == Condition::Kind::kPositive)
        for (double& x : t.data) x = 0.05 + std::fabs(x);
      if (c.kind == Condition::Kind::kNonnegative)
        for (double& x : t.data) x = std::fabs(x);
    }
    inputs.push_back(std::move(t));
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    f.inputs += (i ? "; " : "") + axiom.variables[i].name + " = " + verifier::tensor_text(inputs[i]);
  verifier::SideComparison c;
  try {
    c = verifier::compare_sides(rule, inputs);
  } catch (const std::exception& e) {
    f.what = std::string("evaluation failed: ") + e.what();
    return f;
  }
  const double worst = c.worst;
  f.output = c.output;
  f.index = c.index;
  f.lhs = c.source;
  f.rhs = c.target;
  if (!c.mismatch.empty()) {
    f.what = c.mismatch;
    if (max_error) *max_error = HUGE_VAL;
    return f;
  }
  if (max_error) *max_error = worst;
  if (!(worst > rtol)) return std::nullopt;
  f.what = "the sides differ (relative error " + verifier::number_text(worst) + ")";
  return f;
}

AxiomReport check_axiom(const Axiom& axiom, const CheckOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  AxiomReport report;
  report.axiom = &axiom;
  Instantiation inst;
  try {
    inst = instantiate(axiom, options.max_instances, options.seed);
  } catch (const std::exception& e) {
    report.error = e.what();
    return report;
  }
  report.admitted = inst.admitted;
  report.checked = inst.instances.size();
  report.sampled = inst.sampled;
  if (inst.admitted == 0) report.error = "no instance is admitted (the conditions and types exclude every shape)";
  std::vector<std::optional<Failure>> results(inst.instances.size());
  std::vector<double> errors(inst.instances.size(), 0.0);
  const uint64_t base = splitmix64(options.seed ^ fnv1a(axiom.name, kFnvOffsetShort));
  tbb::parallel_for(size_t{0}, inst.instances.size(), [&](size_t i) {
    results[i] = check_instance(axiom, inst.instances[i], splitmix64(base + inst.instances[i].ordinal), options.rtol, &errors[i]);
  });
  for (size_t i = 0; i < results.size(); ++i) {
    report.max_error = std::max(report.max_error, errors[i]);
    if (!results[i]) continue;
    ++report.failed;
    if (report.failures.empty()) report.failures.push_back(std::move(*results[i]));
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

std::vector<AxiomReport> check_axioms(const std::vector<Axiom>& axioms, const CheckOptions& options) {
  std::vector<AxiomReport> reports(axioms.size());
  tbb::parallel_for(size_t{0}, axioms.size(), [&](size_t i) { reports[i] = check_axiom(axioms[i], options); });
  return reports;
}

std::string format_report(const AxiomReport& r) {
  const Axiom& ax = *r.axiom;
  std::string s = r.holds() ? "  ok     " : r.error.empty() ? "  FALSE  " : "  ERROR  ";
  std::string name = ax.name;
  if (name.size() < 36) name += std::string(36 - name.size(), ' ');
  s += name + " ";
  // Errors raised by the enumeration carry their own FILE:LINE:COL.
  const std::string error = r.error.rfind(ax.file + ":", 0) == 0 ? r.error : ax.location() + ": " + r.error;
  if (!r.error.empty() && r.admitted == 0 && r.checked == 0) {
    s += error + "\n";
    return s;
  }
  char counts[160];
  if (r.sampled)
    std::snprintf(counts, sizeof counts, "%6llu instances (sampled from %llu admitted)", static_cast<unsigned long long>(r.checked),
                  static_cast<unsigned long long>(r.admitted));
  else
    std::snprintf(counts, sizeof counts, "%6llu instances", static_cast<unsigned long long>(r.checked));
  s += counts;
  if (r.failed) s += ", " + std::to_string(r.failed) + " false";
  s += "\n";
  if (!r.error.empty()) s += "         " + error + "\n";
  for (const Failure& f : r.failures) {
    s += "         " + ax.location() + ": " + equation_text(ax) + "\n";
    s += "         instance: " + to_text(f.instance, &ax) + "\n";
    s += "         " + f.what + "\n";
    if (f.output >= 0 && f.what.rfind("the sides", 0) == 0) {
      std::string idx = "[";
      for (size_t d = 0; d < f.index.size(); ++d) idx += (d ? ", " : "") + std::to_string(f.index[d]);
      s += "         worst element: output " + std::to_string(f.output) + " at " + idx + "]: lhs " + verifier::number_text(f.lhs) +
           ", rhs " + verifier::number_text(f.rhs) + "\n";
    }
    if (!f.inputs.empty()) s += "         inputs: " + f.inputs + "\n";
  }
  return s;
}

}  // namespace tgr::axioms
