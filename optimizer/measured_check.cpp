#include "optimizer/measured_check.h"

#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "optimizer/fold_constants.h"
#include "util/statistics.h"

namespace tgr::optimizer {

namespace {

using Clock = std::chrono::steady_clock;

// What a program printed on stdout, its exit status (-1: killed at the
// deadline) and stderr's last lines.
struct ProgramRun {
  std::string out, err;
  int status = -1;
  bool killed = false;
};

// Runs `argv` (argv[0] found on PATH) and collects its output, killing it
// (SIGKILL) when it has not ended `deadline_s` seconds after the start.
ProgramRun run_program(const std::vector<std::string>& argv, double deadline_s) {
  int out_pipe[2], err_pipe[2];
  if (::pipe(out_pipe) != 0 || ::pipe(err_pipe) != 0) throw std::runtime_error("cannot create a pipe");
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("cannot fork");
  if (pid == 0) {
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) ::close(fd);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    std::fprintf(stderr, "cannot run %s\n", args[0]);
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  ProgramRun run;
  const auto deadline = Clock::now() + std::chrono::duration<double>(deadline_s);
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&run.out, &run.err};
  for (int open = 2; open > 0;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      ::kill(pid, SIGKILL);
      run.killed = true;
      break;
    }
    if (::poll(fds, 2, static_cast<int>(std::min<long long>(left, 1000))) < 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
      char buf[4096];
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<size_t>(n));
      } else {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open;
      }
    }
  }
  for (const pollfd& f : fds)
    if (f.fd >= 0) ::close(f.fd);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!run.killed) run.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

// The last non-empty line of `text` (a program's error message).
std::string last_line(const std::string& text) {
  std::istringstream in(text);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  return last;
}

std::string dims_text(const Shape& shape) {
  std::string text;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) text += 'x';
    text += std::to_string(shape[i]);
  }
  return text;
}

// onnxruntime-cpu: tools/measure_ort.py with python3.
class OnnxRuntimeTimer : public ModelTimer {
 public:
  PairedTimes time(const std::string& original, const std::string& rewritten, const MeasureOptions& o) override {
    PairedTimes times;
    if (o.ort_script.empty() || !std::filesystem::exists(o.ort_script)) {
      times.not_measured = "the timing script '" + o.ort_script + "' is missing";
      return times;
    }
    std::vector<std::string> argv = {"python3",      o.ort_script,
                                     original,       rewritten,
                                     "--threads",    std::to_string(o.threads),
                                     "--rounds",     std::to_string(o.rounds),
                                     "--runs",       std::to_string(o.runs),
                                     "--time-limit", std::to_string(o.time_limit_s)};
    for (const auto& [name, shape] : o.input_shapes) {
      argv.push_back("--input-shape");
      argv.push_back(name + "=" + dims_text(shape));
    }
    const ProgramRun run = run_program(argv, 2 * o.time_limit_s);
    if (run.killed) {
      times.stopped_at_limit = true;
      times.seconds = 2 * o.time_limit_s;
      times.runtime = "ONNX Runtime";
      return times;  // no rounds: gave up
    }
    if (run.status == 127 || run.status == 3) {
      times.not_measured = "python3 with onnxruntime is not available (" + last_line(run.err) + ")";
      return times;
    }
    if (run.status != 0) {
      times.not_measured = "ONNX Runtime failed: " + last_line(run.err);
      return times;
    }
    const nlohmann::json j = nlohmann::json::parse(run.out);
    times.original_us = j.at("original_us").get<std::vector<double>>();
    times.rewritten_us = j.at("rewritten_us").get<std::vector<double>>();
    times.runs_per_round = j.at("runs_per_round").get<int>();
    times.seconds = j.at("seconds").get<double>();
    times.stopped_at_limit = j.at("stopped_at_limit").get<bool>();
    times.runtime = j.at("runtime").get<std::string>();
    return times;
  }
};

// Whether this machine shows an NVIDIA GPU to its driver.
bool gpu_present() {
  std::error_code ec;
  return std::filesystem::exists("/dev/nvidia0", ec) || std::filesystem::exists("/dev/nvidiactl", ec);
}

// tgr-gpu: `bench ORIGINAL REWRITTEN` (10 rounds alternating between the
// models, CUDA-graph replays), its RESULT line.
class GpuTimer : public ModelTimer {
 public:
  PairedTimes time(const std::string& original, const std::string& rewritten, const MeasureOptions& o) override {
    PairedTimes times;
    std::error_code ec;
    if (!gpu_present()) {
      times.not_measured = "no GPU on this machine (tgr-gpu is measured with `bench` where one is)";
      return times;
    }
    if (o.bench_program.empty() || !std::filesystem::exists(o.bench_program, ec)) {
      times.not_measured = "no `bench` program next to optimize (a build without CUDA)";
      return times;
    }
    std::vector<std::string> argv = {o.bench_program, original, rewritten, "--no-decoy"};
    if (!o.gpu_costs_db.empty()) argv.insert(argv.end(), {"--db", o.gpu_costs_db});
    if (o.gpu_precision != Precision::kFp32)
      argv.insert(argv.end(), {"--precision", std::string(precision_name(o.gpu_precision))});
    const auto start = Clock::now();
    const ProgramRun run = run_program(argv, o.time_limit_s);
    times.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    times.runtime = "tgr's CUDA runtime (bench: medians of 10 alternating rounds of CUDA-graph replays)";
    if (run.killed) {
      times.stopped_at_limit = true;
      return times;
    }
    std::istringstream lines(run.out);
    for (std::string line; std::getline(lines, line);) {
      std::istringstream in(line);
      std::string tag, name;
      double original_ms = 0, rewritten_ms = 0;
      if (in >> tag >> name >> original_ms >> rewritten_ms && tag == "RESULT") {
        times.original_us = {original_ms * 1000};
        times.rewritten_us = {rewritten_ms * 1000};
        times.runs_per_round = 1;
        return times;
      }
    }
    times.not_measured = "bench failed: " + last_line(run.err.empty() ? run.out : run.err);
    return times;
  }
};

}  // namespace

std::unique_ptr<ModelTimer> make_timer(Target target) {
  switch (target) {
    case Target::kOnnxRuntimeCpu:
      return std::make_unique<OnnxRuntimeTimer>();
    case Target::kTgrGpu:
      return std::make_unique<GpuTimer>();
    case Target::kRoofline:
      return nullptr;
  }
  return nullptr;
}

MeasuredDecision decide(PairedTimes times, const MeasureOptions& options) {
  MeasuredDecision d;
  d.min_speedup = options.min_speedup;
  d.times = std::move(times);
  const PairedTimes& t = d.times;
  if (!t.not_measured.empty()) return d;  // kNotMeasured
  if (t.original_us.size() != t.rewritten_us.size())
    throw std::logic_error("measured: unpaired samples (" + std::to_string(t.original_us.size()) + " and " +
                           std::to_string(t.rewritten_us.size()) + ")");
  // A timer whose one pair is already a median of rounds (bench) needs no more.
  const size_t needed = t.runs_per_round == 1 && t.original_us.size() == 1 ? 1 : options.min_rounds;
  if (t.original_us.empty() || t.original_us.size() < needed) {
    d.outcome = MeasuredDecision::Outcome::kGaveUp;
    return d;
  }
  std::vector<double> ratios;
  for (size_t i = 0; i < t.original_us.size(); ++i) ratios.push_back(t.rewritten_us[i] / t.original_us[i]);
  std::sort(ratios.begin(), ratios.end());
  d.ratio = median(ratios);
  d.ratio_q1 = ratios[ratios.size() / 4];
  d.ratio_q3 = ratios[(3 * ratios.size()) / 4];
  d.original_ms = median(t.original_us) / 1000;
  d.rewritten_ms = median(t.rewritten_us) / 1000;
  d.outcome = d.ratio <= 1 - options.min_speedup ? MeasuredDecision::Outcome::kRewriteFaster
                                                 : MeasuredDecision::Outcome::kNotFaster;
  return d;
}

MeasuredDecision measure_rewrite(const std::string& original, const Graph& rewritten,
                                 const onnx_io::ExportOptions& export_options, ModelTimer* timer,
                                 const MeasureOptions& options) {
  if (!timer) {
    PairedTimes none;
    none.not_measured = "the target runs on no runtime here";
    return decide(std::move(none), options);
  }
  std::string folder = (std::filesystem::temp_directory_path() / "tgr-measure-XXXXXX").string();
  if (!::mkdtemp(folder.data())) throw std::runtime_error("cannot create a temporary folder in " + folder);
  struct Remove {
    std::string path;
    ~Remove() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  } remove{folder};
  const std::string file = folder + "/rewritten.onnx";
  onnx_io::save_graph(fold_constants(rewritten), export_options, file);
  return measure_and_decide(*timer, original, file, options);
}

MeasuredDecision measure_and_decide(ModelTimer& timer, const std::string& original, const std::string& rewritten,
                                    const MeasureOptions& options) {
  return decide(timer.time(original, rewritten, options), options);
}

std::string MeasuredDecision::summary() const {
  char text[512];
  switch (outcome) {
    case Outcome::kNotMeasured:
      return "not measured: " + times.not_measured + "; the rewrite is written as predicted";
    case Outcome::kGaveUp:
      std::snprintf(text, sizeof text,
                    "gave up at the time limit (--measure-time): %zu rounds in %.1f s, too few to compare; %s",
                    times.original_us.size(), times.seconds, times.runtime.c_str());
      return text;
    default:
      std::snprintf(text, sizeof text,
                    "%s, %zu interleaved rounds of %d runs, %.1f s%s: original %.3f ms, rewritten %.3f ms (x%.3f, "
                    "25-75%%: %.3f-%.3f)",
                    times.runtime.c_str(), times.original_us.size(), times.runs_per_round, times.seconds,
                    times.stopped_at_limit ? " (stopped at the time limit)" : "", original_ms, rewritten_ms, ratio,
                    ratio_q1, ratio_q3);
      return text;
  }
}

std::string MeasuredDecision::output_line() const {
  char text[256];
  if (outcome == Outcome::kNotFaster) {
    std::snprintf(text, sizeof text,
                  "the rewrite (%d rule applications, predicted x%.3f) did not measure at least %g%% faster "
                  "(--measure-threshold); the model is written unchanged",
                  rewrites, predicted_ratio, 100 * min_speedup);
    return text;
  }
  if (outcome == Outcome::kGaveUp) {
    std::snprintf(text, sizeof text,
                  "the rewrite (%d rule applications, predicted x%.3f) was not measured faster; the model is "
                  "written unchanged (--measure-time for more time, --no-measure to write it unmeasured)",
                  rewrites, predicted_ratio);
    return text;
  }
  return "";
}

nlohmann::ordered_json MeasuredDecision::to_json() const {
  static const char* const kOutcomes[] = {"rewrite_faster", "not_faster", "gave_up", "not_measured"};
  nlohmann::ordered_json j = {{"outcome", kOutcomes[static_cast<int>(outcome)]},
                              {"runtime", times.runtime},
                              {"rounds", times.original_us.size()},
                              {"runs_per_round", times.runs_per_round},
                              {"seconds", times.seconds},
                              {"stopped_at_limit", times.stopped_at_limit},
                              {"min_speedup", min_speedup},
                              {"predicted_ratio", predicted_ratio},
                              {"rewrites", rewrites}};
  if (outcome == Outcome::kNotMeasured) j["why"] = times.not_measured;
  if (outcome == Outcome::kRewriteFaster || outcome == Outcome::kNotFaster) {
    j["original_ms"] = original_ms;
    j["rewritten_ms"] = rewritten_ms;
    j["ratio"] = ratio;
    j["ratio_q1"] = ratio_q1;
    j["ratio_q3"] = ratio_q3;
  }
  return j;
}

}  // namespace tgr::optimizer
