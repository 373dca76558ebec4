// `optimize --report-html FILE`: one self-contained HTML page a person reads.
//
// The page shows the model before and after, side by side, drawn by
// Graphviz (`dot -Tsvg`, run as a subprocess; the SVG is inlined), with the
// nodes each applied rewrite removed (red, on the left) and added (green,
// on the right) highlighted and listed; each operator's predicted cost on
// the graphs and per operator type in a table (the cost model optimize
// used); and for each rule applied its text and its evidence from the rules
// database: the axioms the proof cites and the instances Z3 used, or for a
// partial (PET) rule its region map and correction.
//
// Nodes are located by name (optimizer/node_names.h): a removed node by its
// name in the model, an added one by the name the rewrite gave it. A
// rewrite whose nodes a later rewrite replaced again lists them as
// intermediate.
#pragma once

#include <string>

#include "pipeline/report.h"

namespace tgr::pipeline {

// Colours of the highlighted nodes (also what the page's tests look for).
inline constexpr const char* kRemovedColour = "#f4a6a6";
inline constexpr const char* kAddedColour = "#a6e3a6";

// The path of Graphviz's `dot` in PATH's absolute folders (PATH unset: the
// system's default; never the current folder); throws std::runtime_error saying
// how to install it when there is none. optimize calls it before it starts,
// so that a missing Graphviz costs no optimization.
std::string find_graphviz_dot();

// `dot` rendered to SVG by `dot_program` (find_graphviz_dot()); throws on a
// failure, with dot's message.
std::string render_svg(const std::string& dot, const std::string& dot_program);

// The page for a report made with OptimizeOptions::keep_graphs.
std::string html_report(const OptimizeReport& report, const std::string& dot_program);

// html_report written to `path`; throws when it cannot be written.
void write_html_report(const OptimizeReport& report, const std::string& path, const std::string& dot_program);

}  // namespace tgr::pipeline
