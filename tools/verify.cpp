// `verify`: prove candidate rules with Z3 from the operator axioms (issue 5);
// check partially equivalent ones (issue 6).
//
//   verify --db rules.db [--timeout-ms MS] [--max-states N] [--retry-unknown] [--rule ID ...]
//       gives every 'candidate' rule of the database a final status: proved
//       (with the axioms of Z3's unsat core), refuted (with a float64
//       counterexample) or unknown (with the reason). Resumable; Ctrl-C
//       commits what is finished and exits 130.
//   verify --db rules.db --recheck-proved
//       evaluates every proved rule again in float64 on fresh random inputs:
//       exit 0 when none differs, 1 otherwise (listing them).
//   verify --prove "SRC => DST" --shapes x0=2x3,w0=3x4 [--smt2 FILE]
//       the same for one rule given on the command line: exit 0 proved,
//       1 refuted, 3 unknown.
//   verify --check "SRC => DST" --shapes x0=1x3x8x8,k0=4x3x3x3 [--trials T] [--correction]
//       runs the multi-linear region checker (partial equivalence, PET;
//       tools/verify_check.h): prints full, partial with the disagreeing
//       boxes, or none, exit 0.
//   verify --check-axioms [--max-instances N] [--seed S] [--axiom NAME ...]
//       checks every axiom of specs/ on its instances (small shapes, every
//       parameter value it admits; a deterministic sample beyond N) with the
//       float64 interpreter on random inputs: exit 0 when all hold, 1 when
//       one is false (or cannot be checked).
// Usage errors exit 2.
#include <CLI/CLI.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "tools/cli_app.h"
#include "tools/cli_common.h"
#include "tools/data_paths.h"
#include "tools/ranks_main.h"
#include "tools/verify_check.h"
#include "util/output_file.h"
#include "verifier/axioms.h"
#include "verifier/prover.h"
#include "verifier/verify_db.h"

namespace {

std::atomic<bool> g_stop{false};
void on_interrupt(int) {
  g_stop = true;
  std::signal(SIGINT, SIG_DFL);  // a second Ctrl-C ends the process at once
}

int check_axioms_command(const std::string& specs, const tgr::axioms::CheckOptions& options,
                         const std::vector<std::string>& only) {
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
}

int prove_command(const std::string& specs, const std::string& text, const std::string& shapes_text,
                  const tgr::util::Limits& limits, const tgr::verifier::ProofOptions& options,
                  const std::string& smt2_path) {
  using namespace tgr::verifier;
  const Prover prover(tgr::axioms::load_axioms(specs));
  tgr::DTypeMap dtypes;
  const tgr::ShapeMap shapes = tgr::parse_shape_map(shapes_text, &dtypes);
  const ProofResult r = prover.prove(tgr::build_rule(text, shapes, dtypes, limits), options);
  if (!smt2_path.empty()) tgr::util::write_text_file(smt2_path, r.smt2);
  std::printf("%s in %.1f ms (%zu forms searched, %zu axiom instances)\n", std::string(status_name(r.status)).c_str(),
              r.ms, r.states, r.instances_found);
  switch (r.status) {
    case ProofStatus::kProved:
      std::printf("  axioms:");
      for (const auto& a : r.axioms) std::printf(" %s", a.c_str());
      std::printf("\n  instances (Z3's unsat core):");
      for (const auto& i : r.instances) std::printf(" %s", i.c_str());
      std::printf("\n");
      return 0;
    case ProofStatus::kRefuted: std::printf("  counterexample: %s\n", r.counterexample.c_str()); return 1;
    case ProofStatus::kUnknown: std::printf("  reason: %s\n", r.reason.c_str()); return 3;
  }
  return 3;
}

int verify_db_command(tgr::verifier::VerifyDbOptions o, tgr::util::Ranks& ranks) {
  using namespace tgr::verifier;
  std::signal(SIGINT, on_interrupt);
  if (!ranks.root()) o.progress = false;
  const VerifyDbReport r = verify_db(o, g_stop, ranks);
  if (!ranks.root()) return r.interrupted ? 130 : 0;  // rank 0 reports
  std::printf("verify: run %lld, %s", static_cast<long long>(r.run), o.db.c_str());
  if (ranks.size() > 1) std::printf(", %d ranks", ranks.size());
  std::printf("\n");
  std::printf("  rules taken      %zu\n", r.taken);
  std::printf("  proved           %zu\n", r.proved);
  std::printf("  refuted          %zu\n", r.refuted);
  std::printf("  unknown          %zu\n", r.unknown);
  for (const auto& [why, n] : r.unknown_reasons) std::printf("    %6zu  %s\n", n, why.c_str());
  std::printf("  time             %.1f s (timeout %u ms per rule)\n", r.seconds, o.proof.timeout_ms);
  if (!r.slowest.empty()) {
    std::printf("  slowest proofs:\n");
    for (const SlowProof& s : r.slowest)
      std::printf("    %8.1f ms  #%lld  %s  %s\n", s.ms, static_cast<long long>(s.id), s.rule.c_str(), s.axioms.c_str());
  }
  if (!r.axiom_uses.empty()) {
    std::printf("  axioms cited by proofs:");
    for (const auto& [name, n] : r.axiom_uses) std::printf(" %s %zu,", name.c_str(), n);
    std::printf("\n");
  }
  if (r.interrupted) {
    std::printf("interrupted: %zu rules stay 'candidate'; run the same command again to continue\n", r.remaining);
    return 130;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Under mpirun: the ranks of one --db run (docs/mpi.md); otherwise one process.
  tgr::cli::ProgramRanks ranks(argc, argv, on_interrupt);
  CLI::App app{"verify: prove candidate rules with Z3 from the operator axioms (specs/), and check axioms", "verify"};
  tgr::cli::setup(app);
  std::string specs = tgr::cli::default_specs_dir();
  app.add_option("--specs", specs, "a folder of *.axioms files, or one file")->capture_default_str();

  tgr::verifier::VerifyDbOptions db_options;
  std::string prove_text, shapes_text;
  auto* db_opt = app.add_option("--db", db_options.db, "prove every candidate rule of this rules database");
  auto* prove_opt = app.add_option("--prove", prove_text, "prove one rule \"SRC => DST\" (with --shapes)");
  auto* shapes_opt = app.add_option("--shapes", shapes_text, "variable shapes for --prove: x0=2x3,w0=3x4 (dtype prefix: ids=int64:1x8)");
  tgr::verifier::ProofOptions& proof = db_options.proof;
  app.add_option("--timeout-ms", proof.timeout_ms, "time limit per rule (search and Z3)")
      ->capture_default_str()
      ->check(CLI::Range(1u, 3'600'000u));
  app.add_option("--max-states", proof.max_states, "rewritten forms the search may visit per rule")
      ->capture_default_str()
      ->check(CLI::Range(size_t{2}, size_t{100'000'000}));
  app.add_option("--refute-trials", proof.refute_trials,
                 "random float64 inputs tried before searching (0: prove without refuting first)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000));
  std::string smt2_path;
  app.add_option("--smt2", smt2_path, "with --prove: write the final Z3 query (SMT-LIB 2) to this file");
  bool recheck = false;
  app.add_flag("--recheck-proved", recheck, "with --db: evaluate every proved rule again in float64 on fresh inputs");
  app.add_flag("--retry-unknown", db_options.retry_unknown, "with --db: take rules whose status is 'unknown' again");
  app.add_option("--rule", db_options.ids, "with --db: only these rule ids (whatever their status)");
  app.add_flag("!--no-progress", db_options.progress, "no progress lines on stderr");
  app.add_option("--stop-after", db_options.stop_after, "testing: stop as if interrupted after N rules")->group("");

  tgr::cli::CheckCommand check;  // partial equivalence (tools/verify_check.h)
  auto* check_rule_opt =
      app.add_option("--check", check.rule, "region-check one rule \"SRC => DST\": full, partial (with the boxes) or none");
  app.add_option("--trials", check.trials, "with --check: random field inputs per position")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_flag("--correction", check.correction, "with --check: also print the corrected target");
  tgr::util::Limits limits;  // of the rule's values, --prove and --check (util/limits.h)
  app.add_option("--max-elements", limits.max_elements,
                 "with --prove or --check: largest value of the rule, in elements (default 2^28)")
      ->check(tgr::cli::at_least(int64_t{1}));
  app.add_option("--max-bytes", limits.max_bytes,
                 "with --prove or --check: total bytes of the values of each side of the rule (default 4 GiB)")
      ->check(tgr::cli::at_least(int64_t{1}));

  bool check_axioms = false;
  tgr::axioms::CheckOptions check_options;
  std::vector<std::string> only;
  auto* check_opt = app.add_flag("--check-axioms", check_axioms,
                                 "check every axiom of the specs on its small-shape instances with the float64 interpreter");
  app.add_option("--max-instances", check_options.max_instances, "instances per axiom; beyond, a deterministic sample")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, size_t{100'000'000}));
  app.add_option("--seed", check_options.seed, "seed of the samples and the random inputs")->capture_default_str();
  app.add_option("--axiom", only, "check only the axioms of these names");
  db_opt->excludes(prove_opt)->excludes(check_opt)->excludes(check_rule_opt);
  prove_opt->excludes(check_opt)->excludes(check_rule_opt);
  check_opt->excludes(check_rule_opt);
  if (auto rc = ranks.parse(app, argc, argv)) return *rc;
  if (ranks->size() > 1 && (db_options.db.empty() || recheck)) {
    if (ranks->root())
      std::fprintf(stderr,
                   "verify: error: only verify --db runs under mpirun (here -np %d); run the others as one process\n",
                   ranks->size());
    return 2;
  }
  proof.seed = check_options.seed;
  proof.smt2 = !smt2_path.empty();

  if (!check.rule.empty()) {
    check.shapes = shapes_text;
    check.seed = check_options.seed;
    check.limits = limits;
    return tgr::cli::run_check(check);
  }
  if (!check_axioms && db_options.db.empty() && prove_text.empty()) {
    std::fprintf(stderr,
                 "verify: error: give --db FILE, --prove \"SRC => DST\", --check \"SRC => DST\" or --check-axioms (see "
                 "--help)\n");
    return 2;
  }
  if (!prove_text.empty() && shapes_opt->count() == 0) {
    std::fprintf(stderr,
                 "verify: error: --prove needs --shapes (the shape of every variable; "
                 " when there is none)\n");
    return 2;
  }
  return ranks.guarded("verify", [&] {
    if (check_axioms) return check_axioms_command(specs, check_options, only);
    if (!prove_text.empty()) {
      tgr::cli::refuse_same_files({{"--specs", specs}, {"--smt2", smt2_path, true}});
      if (!smt2_path.empty()) tgr::util::check_output_path(smt2_path);
    }
    if (!prove_text.empty()) return prove_command(specs, prove_text, shapes_text, limits, proof, smt2_path);
    if (recheck) {
      const auto r = tgr::verifier::recheck_proved(db_options.db, 3, check_options.seed + 0x7e57);
      for (const auto& [id, why] : r.differing)
        std::printf("  DIFFERS  #%lld: %s\n", static_cast<long long>(id), why.c_str());
      std::printf("%zu proved rules re-evaluated in float64 on fresh inputs: %zu differ, %zu set to refuted (%.1f s)\n",
                  r.checked, r.differing.size(), r.refuted, r.seconds);
      return r.differing.empty() ? 0 : 1;
    }
    db_options.specs = specs;
    return verify_db_command(db_options, *ranks);
  });
}
