// `generate`: enumerate operator graphs, fingerprint them, and store the
// candidate rules in a rules database.
#include <CLI/CLI.hpp>

#include <csignal>
#include <cstdio>

#include "generator/composition.h"
#include "generator/derivation_run.h"
#include "generator/generate.h"
#include "generator/partial.h"
#include "tools/cli_app.h"
#include "tools/cli_common.h"
#include "tools/ranks_main.h"

namespace {
std::atomic<bool> g_stop{false};
void on_interrupt(int) {
  g_stop = true;
  std::signal(SIGINT, SIG_DFL);  // a second Ctrl-C ends the process at once
}
// A mode that runs as one process (--partial, --derivations) refuses
// mpirun -np N > 1: a usage error, said once (by rank 0).
bool refused_under_mpirun(const char* mode, int ranks, bool root) {
  if (ranks <= 1) return false;
  if (root) std::fprintf(stderr, "generate: error: %s runs as one process, not under mpirun -np %d\n", mode, ranks);
  return true;
}

int run_derivations(const tgr::gen::GenerateOptions& o, int max_depth, int ranks, bool root) {
  if (refused_under_mpirun("--derivations", ranks, root)) return 2;
  std::signal(SIGINT, on_interrupt);
  return tgr::cli::guarded("generate", [&] {
    tgr::gen::DerivationRunOptions d;
    d.db = o.db;
    d.seed = o.seed;
    d.progress = o.progress;
    d.search.max_depth = max_depth;
    if (!o.space.empty()) {
      const auto more = tgr::gen::space_derivation_sources(o.space);
      d.sources.insert(d.sources.end(), more.begin(), more.end());
    }
    const tgr::gen::DerivationRunReport r = tgr::gen::generate_derivations(d, g_stop);
    std::printf("generate --derivations: run %lld, %zu sources%s, --max-depth %d\n", (long long)r.run, d.sources.size(),
                o.space.empty() ? "" : (" (the built-in ones and space " + o.space + "'s)").c_str(), max_depth);
    std::printf("  programs derived           %lld%s\n", (long long)r.counts.programs,
                r.counts.bounded ? " (a search reached its bound)" : "");
    std::printf("  matched onto operators     %lld\n", (long long)r.counts.matched);
    std::printf("  distinct candidate rules   %lld (%lld refuted by fingerprint or float64)\n",
                (long long)r.counts.candidates, (long long)r.counts.rejected);
    std::printf("  stored                     %lld new rules\n", (long long)r.inserted);
    for (const auto& [kind, n] : r.by_kind) std::printf("    %-48s %lld\n", kind.c_str(), (long long)n);
    std::printf("  time %.1f s\n", r.seconds);
    if (r.interrupted) {
      std::printf("interrupted: what is stored is committed\n");
      return 130;
    }
    return 0;
  });
}

int run_compositions(const tgr::gen::GenerateOptions& o, int rounds, int max_ops, int ranks, bool root) {
  if (refused_under_mpirun("--compose", ranks, root)) return 2;
  std::signal(SIGINT, on_interrupt);
  return tgr::cli::guarded("generate", [&] {
    tgr::gen::CompositionOptions c;
    c.db = o.db;
    c.seed = o.seed;
    c.progress = o.progress;
    c.rounds = rounds;
    c.max_ops = max_ops;
    const tgr::gen::CompositionReport r = tgr::gen::generate_compositions(c, g_stop);
    std::printf("generate --compose: run %lld, %d rounds, --compose-max-ops %d\n", (long long)r.run, rounds, max_ops);
    std::printf("  proved merge rules         %lld\n", (long long)r.proved_rules);
    std::printf("  pairs composed             %lld\n", (long long)r.pairs);
    std::printf("  distinct composites        %lld\n", (long long)r.composites);
    std::printf("  stored                     %lld new rules\n", (long long)r.inserted);
    std::printf("  time %.1f s\n", r.seconds);
    if (r.interrupted) {
      std::printf("interrupted: what is stored is committed\n");
      return 130;
    }
    return 0;
  });
}

int run_partial(const tgr::gen::GenerateOptions& o, int ranks, bool root) {
  if (refused_under_mpirun("--partial", ranks, root)) return 2;
  std::signal(SIGINT, on_interrupt);
  return tgr::cli::guarded("generate", [&] {
    tgr::gen::PartialOptions p;
    p.db = o.db;
    p.seed = o.seed;
    p.progress = o.progress;
    const tgr::gen::PartialReport r = tgr::gen::generate_partial(p, g_stop);
    std::printf("generate --partial: run %lld, %zu source programs\n", (long long)r.run, p.sources.size());
    std::printf("  mutants enumerated         %lld\n", (long long)r.programs);
    std::printf("  with the source's shapes   %lld (region-checked)\n", (long long)r.checked);
    std::printf("  fully equal                %lld\n", (long long)r.full);
    std::printf("  partially equal            %lld\n", (long long)r.partial);
    std::printf("  stored                     %lld new partial rules\n", (long long)r.inserted);
    for (const auto& [kind, n] : r.by_kind) std::printf("    %-40s %lld\n", kind.c_str(), (long long)n);
    std::printf("  time %.1f s\n", r.seconds);
    return 0;
  });
}

// --ops: comma-separated names, empty pieces skipped.
std::vector<std::string> split_ops(const std::string& ops) {
  std::vector<std::string> out;
  for (size_t pos = 0; !ops.empty() && pos <= ops.size();) {
    const size_t comma = std::min(ops.find(',', pos), ops.size());
    if (comma > pos) out.push_back(ops.substr(pos, comma - pos));
    pos = comma + 1;
  }
  return out;
}

// The summary of a run of the enumeration (rank 0's).
void print_report(const tgr::gen::GenerateReport& r, int max_ops) {
  const auto& c = r.candidates;
  std::printf("generate: run %lld%s, space %s, --max-ops %d", (long long)r.run, r.resumed ? " (resumed)" : "",
              r.space.c_str(), max_ops);
  if (r.ranks > 1) std::printf(", %d ranks", r.ranks);
  std::printf("\n");
  std::printf("  graphs enumerated          %llu\n", (unsigned long long)r.enumerated);
  std::printf("  connected graphs           %llu\n", (unsigned long long)r.registered);
  std::printf("  fingerprint classes        %llu (%llu with two or more graphs, %llu graphs in them)\n",
              (unsigned long long)r.fingerprints, (unsigned long long)c.classes, (unsigned long long)c.class_graphs);
  uint64_t left = c.pairs;
  std::printf("  candidate pairs            %llu\n", (unsigned long long)left);
  auto pass = [&](const char* name, uint64_t removed) {
    left -= removed;
    std::printf("  - %-24s -%llu -> %llu\n", name, (unsigned long long)removed, (unsigned long long)left);
  };
  pass("trivial", c.trivial);
  pass("variable renaming", c.renaming);
  pass("commutative arguments", c.commutative);
  pass("common subgraph", c.common_subgraph);
  pass("common supergraph", c.common_supergraph);
  pass("float64 re-check", c.float64_rejected);
  pass("instance of another", c.instances);
  std::printf("  stored                     %lld new, %lld already in the database (%lld before this invocation)\n",
              (long long)r.inserted, (long long)r.found_stored, (long long)r.already_stored);
  std::printf("  time %.1f s, peak memory %.0f MB%s\n", r.seconds, r.peak_memory_mb,
              r.ranks > 1 ? " (the largest rank's)" : "");
  std::printf("    enumeration %.1f s, pairing and pruning %.1f s, generalization %.1f s, storing %.1f s\n",
              r.enumeration_seconds, c.pairing_seconds, c.generalization_seconds, r.storing_seconds);
}

}  // namespace

int main(int argc, char** argv) {
  // Under mpirun: the ranks of one run (docs/mpi.md); otherwise one process.
  tgr::cli::ProgramRanks ranks(argc, argv, on_interrupt);
  CLI::App app{"generate: enumerate operator graphs, fingerprint them in a prime field, and store candidate rules",
               "generate"};
  tgr::cli::setup(app);
  tgr::gen::GenerateOptions o;
  std::string ops;
  app.add_option("--db", o.db, "the rules database (created if missing)")->required();
  app.add_option("--max-ops", o.max_ops, "largest graph, in operators")->check(CLI::Range(1, 5));
  std::string space_names;
  for (const auto& n : tgr::gen::builtin_space_names()) space_names += (space_names.empty() ? "" : ", ") + n;
  app.add_option("--space", o.space,
                 "the search space: a built-in one (" + space_names + ") or a space file (docs/spaces.md)")
      ->capture_default_str();
  app.add_option("--ops", ops, "comma-separated operators, of the space's (default: all of them)");
  app.add_option("--max-elements", o.limits.max_elements,
                 "largest value, in elements, of the space's variables and of what the enumeration computes "
                 "(default 2^28)")
      ->check(tgr::cli::at_least(int64_t{1}));
  app.add_option("--max-bytes", o.limits.max_bytes,
                 "total bytes of each world's variables, and the largest space file read (default 4 GiB)")
      ->check(tgr::cli::at_least(int64_t{1}));
  app.add_option("--vars-per-kind", o.vars_per_kind, "variables of each kind (default: the space's)")
      ->check(CLI::Range(1, 9));
  app.add_option("--seed", o.seed, "seed of the random fingerprint and float64 inputs");
  app.add_flag("!--no-progress", o.progress, "no progress lines on stderr");
  app.add_option("--stop-after", o.stop_after, "testing: stop as if interrupted after storing N rules")->group("");
  bool partial = false;
  CLI::Option* partial_flag = app.add_flag(
      "--partial", partial,
      "partially equivalent rules (PET): mutants of small source programs, region-checked, with corrections");
  bool derivations = false;
  int max_depth = 3;
  CLI::Option* derivations_flag = app.add_flag(
      "--derivations", derivations,
      "derivation-based rules (EinNet): operators' tensor-algebra expressions rewritten (summations split, "
      "stages and iterators merged, stages inlined) and matched back onto operators; sources: built-in ones, "
      "and with --space the space's operators");
  app.add_option("--max-depth", max_depth, "derivation rules applied in a row")
      ->check(CLI::Range(1, 6))
      ->capture_default_str()
      ->needs(derivations_flag);
  derivations_flag->excludes(partial_flag);
  bool compose = false;
  int compose_rounds = 2, compose_max_ops = 8;
  CLI::Option* compose_flag = app.add_flag(
      "--compose", compose,
      "composites of the database's proved multi-output rules (a merge, then a split bias or activation over "
      "its pieces): one rewritten inside the other's source, unified, stored as candidates for verify");
  app.add_option("--rounds", compose_rounds, "composites composed again with the proved rules, rounds")
      ->check(CLI::Range(1, 4))
      ->capture_default_str()
      ->needs(compose_flag);
  app.add_option("--compose-max-ops", compose_max_ops, "operators a side of a composite, at most")
      ->check(CLI::Range(2, 16))
      ->capture_default_str()
      ->needs(compose_flag);
  compose_flag->excludes(partial_flag)->excludes(derivations_flag);
  if (auto rc = ranks.parse(app, argc, argv)) return *rc;
  if (compose) return run_compositions(o, compose_rounds, compose_max_ops, ranks->size(), ranks->root());
  if (derivations) {
    if (!app.get_option("--space")->count()) o.space.clear();  // the built-in sources only
    return run_derivations(o, max_depth, ranks->size(), ranks->root());
  }
  if (partial) return run_partial(o, ranks->size(), ranks->root());
  o.ops = split_ops(ops);
  std::signal(SIGINT, on_interrupt);
  return ranks.guarded("generate", [&] {
    if (!ranks->root()) o.progress = false;
    const tgr::gen::GenerateReport r = tgr::gen::generate(o, g_stop, *ranks);
    if (!ranks->root()) return r.interrupted ? 130 : 0;  // rank 0 reports
    print_report(r, o.max_ops);
    if (r.interrupted) {
      std::printf("interrupted: what is stored is committed; run the same command again to continue\n");
      return 130;
    }
    return 0;
  });
}
