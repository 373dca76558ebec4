// `verify`: prove candidate rules with Z3 and check partial ones (issues 5, 6).
//
//   verify --check-axioms [--specs DIR|FILE] [--max-instances N] [--seed S] [--axiom NAME ...]
//
// checks every axiom of specs/ on its instances (small shapes, every
// parameter value it admits; a deterministic sample beyond N) with the
// float64 interpreter on random inputs: exit 0 when all hold, 1 when one is
// false (or cannot be checked), 2 for a usage error. Proving rules arrives
// with a later issue.
//
//   verify --check "SRC => DST" --shapes x0=1x3x8x8,k0=4x3x3x3 [--trials T] [--seed S] [--correction]
//
// runs the multi-linear region checker (tools/verify_check.h): prints full,
// partial with the disagreeing boxes, or none, exit 0.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "tools/cli_common.h"
#include "tools/verify_check.h"
#include "verifier/axioms.h"

#ifndef TGR_SPECS_DIR
#define TGR_SPECS_DIR "specs"
#endif

int main(int argc, char** argv) {
  CLI::App app{"verify: prove candidate rules with Z3 and check partial ones (issues 5, 6)"};
  bool check_axioms = false;
  std::string specs = TGR_SPECS_DIR;
  tgr::axioms::CheckOptions options;
  std::vector<std::string> only;
  app.add_flag("--check-axioms", check_axioms,
               "check every axiom of the specs on its small-shape instances with the float64 interpreter");
  app.add_option("--specs", specs, "a folder of *.axioms files, or one file")->capture_default_str();
  app.add_option("--max-instances", options.max_instances,
                 "instances per axiom; beyond, a deterministic sample")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, size_t{100'000'000}));
  app.add_option("--seed", options.seed, "seed of the sample and the random inputs")->capture_default_str();
  app.add_option("--axiom", only, "check only the axioms of these names");
  tgr::cli::CheckCommand check;  // partial equivalence (tools/verify_check.h)
  app.add_option("--check", check.rule, "region-check one rule \"SRC => DST\": full, partial (with the boxes) or none");
  app.add_option("--shapes", check.shapes, "with --check: the variables' shapes, x0=1x3x8x8,k0=4x3x3x3");
  app.add_option("--trials", check.trials, "with --check: random field inputs per position")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_flag("--correction", check.correction, "with --check: also print the corrected target");
  CLI11_PARSE(app, argc, argv);
  if (!check.rule.empty()) {
    check.seed = options.seed;
    return tgr::cli::run_check(check);
  }
  if (!check_axioms) return tgr::cli::not_yet("verify", "proving rules");

  return tgr::cli::guarded("verify", [&] {
    const auto start = std::chrono::steady_clock::now();
    std::vector<tgr::axioms::Axiom> axioms = tgr::axioms::load_axioms(specs);
    if (!only.empty()) {
      std::vector<tgr::axioms::Axiom> kept;
      for (const std::string& name : only) {
        bool found = false;
        for (const auto& a : axioms)
          if (a.name == name) {
            kept.push_back(a);
            found = true;
          }
        if (!found) throw std::runtime_error("no axiom named '" + name + "' in " + specs);
      }
      axioms = std::move(kept);
    }
    std::printf("checking %zu axioms from %s (float64, relative tolerance %.0e, at most %zu instances each, seed %llu)\n",
                axioms.size(), specs.c_str(), options.rtol, options.max_instances,
                static_cast<unsigned long long>(options.seed));
    std::fflush(stdout);
    const auto reports = tgr::axioms::check_axioms(axioms, options);
    size_t holding = 0, instances = 0, sampled = 0;
    for (const auto& r : reports) {
      std::fputs(tgr::axioms::format_report(r).c_str(), stdout);
      holding += r.holds();
      instances += r.checked;
      sampled += r.sampled;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%zu axioms: %zu hold, %zu false or unchecked; %zu instances checked (%zu axioms sampled) in %.1f s\n",
                reports.size(), holding, reports.size() - holding, instances, sampled, seconds);
    return holding == reports.size() ? 0 : 1;
  });
}
