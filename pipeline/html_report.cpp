#include "pipeline/html_report.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "ir/graph_dot.h"
#include "rules_db/rules_db.h"
#include "util/output_file.h"

namespace tgr::pipeline {

using optimizer::AppliedRewrite;

namespace {

std::string html_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '&') out += "&amp;";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string format_us(double us) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", us);
  return buf;
}

// A file removed when it goes out of scope.
struct TempFile {
  std::string path;
  explicit TempFile(const char* suffix) {
    std::string pattern = (std::filesystem::temp_directory_path() / "tgr_report_XXXXXX").string() + suffix;
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    const int fd = mkstemps(buf.data(), static_cast<int>(std::string(suffix).size()));
    if (fd < 0) throw std::runtime_error("cannot create a temporary file in " + pattern);
    ::close(fd);
    path = buf.data();
  }
  ~TempFile() { std::remove(path.c_str()); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The root <svg> tag's width and height move to data- attributes: the page
// sizes the drawing to its column and the screen (and back on a click).
std::string fit_svg(std::string svg) {
  const size_t start = svg.find("<svg");
  if (start == std::string::npos) throw std::runtime_error("dot wrote no <svg> element");
  svg.erase(0, start);
  const size_t end = svg.find('>');
  std::string tag = svg.substr(0, end);
  for (const char* attr : {"width=\"", "height=\""}) {
    const size_t at = tag.find(std::string(" ") + attr);
    if (at != std::string::npos) tag.insert(at + 1, "data-");
  }
  return tag + svg.substr(end);
}

// Node names of a graph, for locating a rewrite's nodes: operators by
// name; weights (folded from operators) by name; and by value name, so that
// a weight folded from a rewrite's node is found by the node's name.
class NameIndex {
 public:
  explicit NameIndex(const Graph& graph) {
    for (int32_t i : graph.topological_order()) {
      const Node& n = graph.node(i);
      if (n.is_input()) continue;
      if (!n.name.empty()) by_name_.emplace(n.name, i);
      for (const std::string& v : n.value_names)
        if (!v.empty()) by_value_.emplace(v, i);
    }
  }
  // The node named `name`, or whose output (or folded weight) is "<name>_output_<k>"; -1: none.
  int32_t find(const std::string& name) const {
    if (auto it = by_name_.find(name); it != by_name_.end()) return it->second;
    const std::string prefix = name + "_output_";
    for (auto* index : {&by_name_, &by_value_}) {
      auto it = index->lower_bound(prefix);
      if (it != index->end() && it->first.starts_with(prefix)) return it->second;
    }
    return -1;
  }

 private:
  std::map<std::string, int32_t> by_name_, by_value_;
};

struct Located {
  std::vector<std::pair<std::string, bool>> removed, added;  // name, found in the drawn graph
};

std::string names_html(const std::vector<std::pair<std::string, bool>>& names, const char* colour) {
  if (names.empty()) return "<span class=\"none\">none</span>";
  std::string out;
  for (const auto& [name, found] : names) {
    out += found ? "<code style=\"background:" + std::string(colour) + "\">" + html_escape(name) + "</code> "
                 : "<code class=\"intermediate\" title=\"replaced again by a later rewrite\">" + html_escape(name) +
                       "</code> ";
  }
  return out;
}

// The rule's record in the database it came from, as HTML.
std::string evidence_html(const OptimizeOptions& o, const AppliedRewrite& r) {
  const bool shipped = r.tag.starts_with("default_");
  const std::string& path = shipped ? o.default_rules_db : o.rules_db;
  std::string out = "<dl>";
  auto field = [&](const char* key, const std::string& value) {
    out += "<dt>" + std::string(key) + "</dt><dd><code>" + html_escape(value) + "</code></dd>";
  };
  try {
    const rules_db::RulesDb db = rules_db::RulesDb::open_read_only(path);
    const auto record = db.get_rule(r.rule_id);
    if (!record) return "<p>rule " + std::to_string(r.rule_id) + " is not in " + html_escape(path) + "</p>";
    field("database", path + ", rule " + std::to_string(record->id));
    field("status", record->status + " (" + record->kind + ")");
    field("stored as", record->rule_text());
    field("proved at shapes", record->variables);
    if (record->kind == "partial") {
      field("region check", record->region_map.value_or("(none)"));
      field("correction", record->correction.value_or("(none)"));
    } else {
      field("axioms cited", record->axioms.value_or("(none)"));
    }
    if (record->note) field("proof", *record->note);
    if (record->proof_ms) field("proof time", format_us(*record->proof_ms) + " ms");
  } catch (const std::exception& e) {
    return "<p>the rules database could not be read: " + html_escape(e.what()) + "</p>";
  }
  out +=
      "<dt>at the model's shapes</dt><dd>every instance proved again before it was applied "
      "(partial rules: corrected and region-checked)</dd>";
  return out + "</dl>";
}

// Per operator type: how many and their predicted cost, before and after.
std::string cost_table_html(const CostedGraph& before, const CostedGraph& after) {
  struct Row {
    int count[2] = {0, 0};
    double us[2] = {0, 0};
  };
  std::map<std::string, Row> rows;
  const CostedGraph* graphs[2] = {&before, &after};
  for (int side = 0; side < 2; ++side) {
    const Graph& g = graphs[side]->graph;
    for (int32_t i : g.topological_order()) {
      if (!g.node(i).is_op()) continue;
      Row& row = rows[g.node(i).op->name];
      ++row.count[side];
      row.us[side] += graphs[side]->node_costs_us.at(i);
    }
  }
  std::string out =
      "<table class=\"costs\"><tr><th>operator</th><th>count before</th><th>us before</th><th>count after</th>"
      "<th>us after</th><th>change (us)</th></tr>";
  Row total;
  for (const auto& [op, row] : rows) {
    out += "<tr><td>" + html_escape(op) + "</td>";
    for (int side = 0; side < 2; ++side) {
      out += "<td>" + std::to_string(row.count[side]) + "</td><td>" + format_us(row.us[side]) + "</td>";
      total.count[side] += row.count[side];
      total.us[side] += row.us[side];
    }
    out += "<td>" + format_us(row.us[1] - row.us[0]) + "</td></tr>";
  }
  out += "<tr class=\"total\"><td>all</td>";
  for (int side = 0; side < 2; ++side)
    out += "<td>" + std::to_string(total.count[side]) + "</td><td>" + format_us(total.us[side]) + "</td>";
  return out + "<td>" + format_us(total.us[1] - total.us[0]) + "</td></tr></table>";
}

const char* kStyle = R"(
body { font-family: Helvetica, Arial, sans-serif; margin: 16px; color: #222; background: #fff; }
h1 { font-size: 20px; } h2 { font-size: 17px; margin-top: 28px; }
.graphs { display: flex; gap: 16px; align-items: flex-start; }
.graphs figure { flex: 1 1 0; min-width: 0; margin: 0; border: 1px solid #ccc; padding: 4px; }
.graphs figcaption { font-weight: bold; margin-bottom: 4px; }
.graphs svg { width: 100%; height: 85vh; cursor: zoom-in; }
.graphs figure.full { overflow: auto; max-height: 95vh; }
.graphs figure.full svg { cursor: zoom-out; }
table { border-collapse: collapse; margin: 8px 0; }
td, th { border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top; }
tr.total td { font-weight: bold; }
code { font-size: 12px; padding: 0 2px; }
code.intermediate { color: #777; text-decoration: line-through; }
.none { color: #777; }
dl { display: grid; grid-template-columns: max-content auto; gap: 2px 12px; }
dt { font-weight: bold; } dd { margin: 0; }
.legend span { padding: 1px 6px; border: 1px solid #999; }
)";

// Click a drawing: its natural size (scroll), click again: fitted.
const char* kScript = R"(
document.querySelectorAll('.graphs figure').forEach(function (figure) {
  var svg = figure.querySelector('svg');
  if (!svg) return;
  svg.addEventListener('click', function () {
    var full = figure.classList.toggle('full');
    svg.style.width = full ? svg.getAttribute('data-width') : '';
    svg.style.height = full ? svg.getAttribute('data-height') : '';
  });
});
)";

}  // namespace

std::string find_graphviz_dot() {
  // Absolute folders only: an empty entry (PATH unset, "", a trailing ':')
  // or a relative one would run a 'dot' of the current folder. Unset, PATH
  // is the system's default (confstr's _CS_PATH, as execvp takes it).
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  if (!path) {
    dirs.resize(::confstr(_CS_PATH, nullptr, 0));
    if (!dirs.empty()) dirs.resize(::confstr(_CS_PATH, dirs.data(), dirs.size()) - 1);
  }
  for (size_t start = 0; start <= dirs.size();) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const std::string dir = dirs.substr(start, end - start);
    start = end + 1;
    if (dir.empty() || dir[0] != '/') continue;
    const std::string candidate = dir + "/dot";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  throw std::runtime_error(
      "--report-html draws the graphs with Graphviz's 'dot', which is not on PATH (install the Debian package "
      "graphviz; tools/setup.sh does)");
}

std::string render_svg(const std::string& dot, const std::string& dot_program) {
  TempFile input(".dot"), errors(".err");
  {
    std::ofstream out(input.path);
    if (!(out << dot)) throw std::runtime_error("cannot write " + input.path);
  }
  const std::string command =
      shell_quote(dot_program) + " -Tsvg " + shell_quote(input.path) + " 2>" + shell_quote(errors.path);
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) throw std::runtime_error("cannot run " + dot_program);
  std::string svg;
  char buf[65536];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) svg.append(buf, n);
  const int status = ::pclose(pipe);
  if (status != 0) throw std::runtime_error(dot_program + " -Tsvg failed: " + read_file(errors.path));
  return fit_svg(std::move(svg));
}

std::string html_report(const OptimizeReport& report, const std::string& dot_program) {
  if (!report.before || !report.after) throw std::logic_error("html_report: the report holds no graphs");
  const OptimizeOptions& o = report.options;
  const CostedGraph& before = *report.before;
  const CostedGraph& after = *report.after;
  const NameIndex before_names(before.graph), after_names(after.graph);

  DotStyle left, right;
  left.name = "before";
  right.name = "after";
  left.id_prefix = "before_";
  right.id_prefix = "after_";
  left.weights = right.weights = false;
  left.node_costs_us = before.node_costs_us;
  right.node_costs_us = after.node_costs_us;
  std::vector<Located> located;
  for (const AppliedRewrite& r : report.rewrites) {
    Located l;
    for (const std::string& name : r.removed) {
      const int32_t i = before_names.find(name);
      if (i >= 0) left.highlight[i] = kRemovedColour;
      l.removed.emplace_back(name, i >= 0);
    }
    for (const std::string& name : r.added) {
      const int32_t i = after_names.find(name);
      if (i >= 0) right.highlight[i] = kAddedColour;
      l.added.emplace_back(name, i >= 0);
    }
    located.push_back(std::move(l));
  }

  std::string html = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>tgr optimize: " +
                     html_escape(o.model) + "</title>\n<style>" + kStyle + "</style></head><body>\n";
  html += "<h1>tgr optimize: " + html_escape(o.model) + " &rarr; " + html_escape(o.output) + "</h1>\n";
  char line[256];
  std::snprintf(line, sizeof line, "%d &rarr; %d operators; predicted cost %.1f us &rarr; %.1f us (x%.3f)",
                report.operators_before, report.operators_after, report.cost_before_us, report.cost_after_us,
                report.cost_ratio());
  html += "<p>" + std::string(line) + ", " + html_escape(report.cost_model) + ". Rules: " + html_escape(o.rules_db);
  if (report.default_rules_added) html += " and " + html_escape(o.default_rules_db);
  html += "; search stopped: " + html_escape(report.stop_reason()) + ".</p>\n";
  html += "<p class=\"legend\"><span style=\"background:" + std::string(kRemovedColour) +
          "\">removed by a rewrite</span> <span style=\"background:" + std::string(kAddedColour) +
          "\">added by a rewrite</span> &mdash; click a drawing for its natural size.</p>\n";

  html += "<div class=\"graphs\">\n";
  std::snprintf(line, sizeof line, "Before: %d operators, %.1f us", report.operators_before, report.cost_before_us);
  html += "<figure id=\"before\"><figcaption>" + std::string(line) + "</figcaption>\n" +
          render_svg(graph_to_dot(before.graph, left), dot_program) + "</figure>\n";
  std::snprintf(line, sizeof line, "After: %d operators, %.1f us", report.operators_after, report.cost_after_us);
  html += "<figure id=\"after\"><figcaption>" + std::string(line) + "</figcaption>\n" +
          render_svg(graph_to_dot(after.graph, right), dot_program) + "</figure>\n";
  html += "</div>\n";

  html += "<h2>Rewrites applied (" + std::to_string(report.rewrites.size()) + ")</h2>\n";
  if (report.rewrites.empty()) html += "<p>No rule applied: the model is unchanged.</p>\n";
  else html += "<table id=\"rewrites\"><tr><th>#</th><th>rule</th><th>removed</th><th>added</th></tr>\n";
  for (size_t k = 0; k < report.rewrites.size(); ++k) {
    const AppliedRewrite& r = report.rewrites[k];
    html += "<tr><td>" + std::to_string(k + 1) + "</td><td><a href=\"#" + html_escape(r.tag) + "\">" +
            html_escape(r.tag) + "</a></td><td>" + names_html(located[k].removed, kRemovedColour) + "</td><td>" +
            names_html(located[k].added, kAddedColour) + "</td></tr>\n";
  }
  if (!report.rewrites.empty()) html += "</table>\n";

  html += "<h2>Rules applied and their proofs</h2>\n";
  std::set<std::string> shown;
  for (const AppliedRewrite& r : report.rewrites) {
    if (!shown.insert(r.tag).second) continue;
    int count = 0;
    for (const AppliedRewrite& other : report.rewrites) count += other.tag == r.tag;
    html += "<section class=\"rule\" id=\"" + html_escape(r.tag) + "\"><h3>" + html_escape(r.tag) + " (applied " +
            std::to_string(count) + "x)</h3>\n<p><code>" + html_escape(r.rule_text) + "</code></p>\n" +
            evidence_html(o, r) + "</section>\n";
  }
  if (shown.empty()) html += "<p>None.</p>\n";

  html += "<h2>Predicted cost per operator</h2>\n<p>" + html_escape(report.cost_model) +
          "; operators of weights only are folded and cost nothing.</p>\n" + cost_table_html(before, after) + "\n";
  html += "<script>" + std::string(kScript) + "</script>\n</body></html>\n";
  return html;
}

void write_html_report(const OptimizeReport& report, const std::string& path, const std::string& dot_program) {
  const std::string html = html_report(report, dot_program);
  util::write_text_file(path, html);
}

}  // namespace tgr::pipeline
