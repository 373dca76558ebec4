// The command-line convention every program in build/bin follows
// (docs/cli.md), in one place: --version, defaults shown in --help, options
// accepted before or after a subcommand, bounds stated in words, and usage
// errors as "PROG: error: ..." with exit status 2.
//
//   CLI::App app{"run: ...", "run"};
//   tgr::cli::setup(app);            // before adding options
//   ... add options ...
//   if (auto rc = tgr::cli::parse(app, argc, argv)) return *rc;
#pragma once

#include <CLI/CLI.hpp>

#include <cmath>
#include <csignal>
#include <functional>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>

#include "util/limits.h"
#include "util/version.h"

namespace tgr::cli {

// The first line of every program's --version: "PROG VERSION".
inline std::string version_line(const std::string& program) { return program + " " + tgr::version(); }

// Call on a new App (constructed with its program name) before adding
// options. `more_version` adds lines after the version line (run: the build
// configuration and the GPUs).
inline void setup(CLI::App& app, std::function<std::string()> more_version = {}) {
  // Past a file size limit (ulimit -f) a write fails (EFBIG) and is reported
  // like any write error, its temporary file removed; SIGXFSZ's default
  // would end the program there, temporaries left.
  std::signal(SIGXFSZ, SIG_IGN);
  app.option_defaults()->always_capture_default();  // --help shows each default
  app.fallthrough();                                // `rules stats --db F` as well as `rules --db F stats`
  const std::string program = app.get_name();
  app.set_version_flag(
      "--version",
      [program, more_version] {
        std::string text = version_line(program);
        if (more_version) text += "\n" + more_version();
        return text;
      },
      "print the version and exit");
}

// An empty list or text has no default worth showing ("=[]").
inline void hide_empty_defaults(CLI::App& app) {
  for (CLI::Option* option : app.get_options())
    if (option->get_default_str() == "[]") option->default_str("");
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) hide_empty_defaults(*sub);
}

// Parses the command line. Returns the exit status when the program should
// stop now: 0 after --help or --version (printed on stdout), 2 after a usage
// error (printed on stderr as "PROG: error: ..."); nothing to go on.
// CLI11's own exit codes (105 for a validation error, 106 for a missing
// option, ...) never reach the shell.
inline std::optional<int> parse(CLI::App& app, int argc, char** argv) {
  hide_empty_defaults(app);
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);  // help, version
    // An unknown argument is the first thing to say, though CLI11 finds a
    // missing required option first.
    std::string message = e.what();
    const std::vector<std::string> unknown = app.remaining(true);
    if (e.get_name() != "ExtrasError" && !unknown.empty()) {
      message = "unexpected argument";
      for (const std::string& arg : unknown) message += " '" + arg + "'";
    }
    std::cerr << app.get_name() << ": error: " << message << "\n"
              << "Run '" << app.get_name() << " --help' for the options.\n";
    return 2;
  }
}

// A lower bound with no upper one, stated in words ("--budget: 0 is below
// 1; the value has no upper limit") rather than as CLI11's PositiveNumber,
// whose message prints the largest double in 309 digits. NaN is refused
// (it compares false with every bound, so CLI11's own checks let it pass).
template <class T>
CLI::Validator at_least(T min) {
  std::ostringstream bound;
  bound << min;
  return CLI::Validator(
      [min, text = bound.str()](std::string& input) -> std::string {
        T value{};
        if (!CLI::detail::lexical_cast(input, value)) return "'" + input + "' is not a number";
        if (!(value >= min)) return input + " is below " + text + " (the least value; there is no upper limit)";
        return {};
      },
      bound.str() + " or more");
}

// A number in [min, max]: CLI::Range, but NaN and infinities are refused.
inline CLI::Validator within(double min, double max) {
  std::ostringstream bounds;
  bounds << min << " to " << max;
  return CLI::Validator(
      [min, max, text = bounds.str()](std::string& input) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(input, value)) return "'" + input + "' is not a number";
        if (!(value >= min && value <= max)) return input + " is not within " + text;
        return {};
      },
      bounds.str());
}

// A number greater than zero (ratios), finite (no upper limit otherwise).
inline CLI::Validator positive() {
  return CLI::Validator(
      [](std::string& input) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(input, value)) return "'" + input + "' is not a number";
        if (!(value > 0) || !std::isfinite(value))
          return input + " is not a finite number above 0 (the value must be positive; there is no upper limit)";
        return {};
      },
      "above 0");
}

// The longest time limit a command takes (util/limits.h).
using util::kMaxSeconds;

// Seconds of a time limit: above 0 (or at least 0 with `zero_allowed`) and
// at most kMaxSeconds; NaN and infinities refused.
inline CLI::Validator seconds(bool zero_allowed = false) {
  return CLI::Validator(
      [zero_allowed](std::string& input) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(input, value)) return "'" + input + "' is not a number";
        if (!(zero_allowed ? value >= 0 : value > 0) || !(value <= kMaxSeconds))
          return input + " is not a number of seconds " + (zero_allowed ? "from 0" : "above 0") +
                 " to 31536000 (a year)";
        return {};
      },
      zero_allowed ? "0 to 31536000" : "above 0, at most 31536000");
}

}  // namespace tgr::cli
