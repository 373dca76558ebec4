#include "saturation/window.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

namespace tgr::saturation {

namespace {

// A window graph's name for value k of class c ("w12_0": read in; "o12_0": read out).
std::string value_name(const char* prefix, size_t c, size_t k) {
  std::string name(prefix);
  name.append(std::to_string(c)).append(1, '_').append(std::to_string(k));
  return name;
}

}  // namespace

int32_t SelectionWindows::ChoiceOf::operator()(ClassId c) const {
  if (switches)
    for (const auto& [switched, node] : *switches)
      if (switched == c) return node;
  return base->choice[c];
}

SelectionWindows::SelectionWindows(const EGraph& egraph, const std::vector<ClassId>& roots, optimizer::CostModel& model,
                                   size_t radius)
    : egraph_(egraph), model_(model), radius_(radius) {
  // At radius 0 a removed class's readers would be outside the window,
  // and the two windows' outputs would differ.
  if (radius == 0) throw std::invalid_argument("refinement window: the radius must be at least 1");
  for (ClassId r : roots) roots_.push_back(egraph.find(r));
}

void SelectionWindows::reset(const Selection& current) {
  current_ = current;
  const size_t n = current.choice.size();
  used_.assign(n, 0);
  is_root_.assign(n, 0);
  for (ClassId r : roots_) is_root_.at(r) = 1;
  std::vector<uint32_t> count(n + 1, 0);
  used_list_.clear();
  walk_selection(egraph_, current_, roots_, [&](ClassId c, const ENode& node) {
    used_[c] = 1;
    used_list_.push_back(c);
    for (ClassId child : node.children) ++count[egraph_.find(child)];
  });
  reader_start_.assign(n + 1, 0);
  for (size_t c = 0; c < n; ++c) reader_start_[c + 1] = reader_start_[c] + count[c];
  readers_.assign(reader_start_[n], 0);
  std::vector<uint32_t> next(reader_start_.begin(), reader_start_.end() - 1);
  for (ClassId c : used_list_)
    for (ClassId child : egraph_.eclass(c).nodes[static_cast<size_t>(current_.choice[c])].children)
      readers_[next[egraph_.find(child)]++] = c;
}

SelectionWindows::Switches SelectionWindows::switches_to(const Selection& trial) const {
  if (trial.choice.size() != current_.choice.size())
    throw std::logic_error("refinement window: the trial has another number of classes");
  Switches out;
  for (size_t c = 0; c < trial.choice.size(); ++c)
    if (trial.choice[c] != current_.choice[c]) out.emplace_back(static_cast<ClassId>(c), trial.choice[c]);
  return out;
}

std::vector<ClassId> SelectionWindows::window(const Selection& trial) const {
  const Switches switches = switches_to(trial);
  std::vector<char> in_window, trial_used;
  return window(ChoiceOf{&current_, &switches}, in_window, trial_used);
}

std::vector<ClassId> SelectionWindows::window(const ChoiceOf& trial, std::vector<char>& in_window,
                                              std::vector<char>& trial_used) const {
  const size_t n = current_.choice.size();
  // The classes the trial uses (a depth-first walk from the roots, as
  // walk_selection, listing them instead of visiting every class).
  trial_used.assign(n, 0);
  std::vector<ClassId> trial_list;
  {
    enum : char { kNew, kOpen, kDone };
    std::vector<char>& state = trial_used;
    std::vector<std::pair<ClassId, size_t>> stack;
    for (ClassId root : roots_) {
      if (state[root] != kNew) continue;
      stack.emplace_back(root, 0);
      state[root] = kOpen;
      while (!stack.empty()) {
        auto& [c, next_child] = stack.back();
        const int32_t choice = trial(c);
        if (choice < 0) throw std::logic_error("refinement window: no e-node chosen for " + egraph_.describe(c));
        const ENode& node = egraph_.eclass(c).nodes[static_cast<size_t>(choice)];
        if (next_child < node.children.size()) {
          const ClassId d = egraph_.find(node.children[next_child++]);
          if (state[d] == kOpen)
            throw std::logic_error("refinement window: the choice is cyclic at " + egraph_.describe(d));
          if (state[d] == kNew) {
            state[d] = kOpen;
            stack.emplace_back(d, 0);
          }
          continue;
        }
        state[c] = kDone;
        trial_list.push_back(c);
        stack.pop_back();
      }
    }
    for (ClassId c : trial_list) state[c] = 1;  // kDone -> used
  }
  const ChoiceOf current{&current_, nullptr};
  auto chosen = [&](const ChoiceOf& s, ClassId c) -> const ENode& {
    return egraph_.eclass(c).nodes[static_cast<size_t>(s(c))];
  };
  // R: the classes whose e-node differs between the selections, or that
  // only one of them uses.
  in_window.assign(n, 0);
  std::vector<ClassId> classes, frontier;
  auto changed = [&](ClassId c) {
    if (in_window[c]) return;
    in_window[c] = 1;
    frontier.push_back(c);
  };
  for (ClassId c : trial_list)
    if (!used_[c] || current_.choice[c] != trial(c)) changed(c);
  for (ClassId c : used_list_)
    if (!trial_used[c]) changed(c);
  classes = frontier;
  // Every class within `radius_` steps, by children (of either selection's
  // e-node) and readers (the current selection's; a class only the trial
  // uses is read by changed classes only, which are in R).
  auto visit = [&](ClassId d, std::vector<ClassId>& next) {
    d = egraph_.find(d);
    if (in_window[d]) return;
    in_window[d] = 1;
    classes.push_back(d);
    next.push_back(d);
  };
  for (size_t step = 0; step < radius_ && !frontier.empty(); ++step) {
    std::vector<ClassId> next;
    for (ClassId c : frontier) {
      if (used_[c]) {
        for (ClassId child : chosen(current, c).children) visit(child, next);
        for (uint32_t k = reader_start_[c]; k < reader_start_[c + 1]; ++k) visit(readers_[k], next);
      }
      if (trial_used[c] && trial(c) != current_.choice[c])
        for (ClassId child : chosen(trial, c).children) visit(child, next);
    }
    frontier = std::move(next);
  }
  // The constant classes the window reads, with what they are computed
  // from: weights stay weights (folded, free) instead of becoming inputs.
  std::vector<ClassId> stack;
  for (ClassId c : classes) stack.push_back(c);
  while (!stack.empty()) {
    const ClassId c = stack.back();
    stack.pop_back();
    for (const ChoiceOf* s : {&current, &trial}) {
      if (!(s == &current ? used_[c] : trial_used[c])) continue;
      for (ClassId child : chosen(*s, c).children) {
        child = egraph_.find(child);
        if (in_window[child] || !egraph_.data(child).constant) continue;
        in_window[child] = 1;
        classes.push_back(child);
        stack.push_back(child);
      }
    }
  }
  std::sort(classes.begin(), classes.end());  // both window graphs list their outputs in this order
  return classes;
}

Graph SelectionWindows::window_graph(const ChoiceOf& selection, const std::vector<ClassId>& classes,
                                     const std::vector<char>& in_window, const std::vector<char>& used) const {
  Graph g;
  std::unordered_map<ClassId, std::vector<ValueRef>> values;
  // A value read from outside the window: a graph input, once.
  auto outside = [&](ClassId d) -> const std::vector<ValueRef>& {
    auto it = values.find(d);
    if (it != values.end()) return it->second;
    const ClassData& data = egraph_.data(d);
    std::vector<ValueRef> refs;
    for (size_t k = 0; k < data.shapes.size(); ++k)
      refs.push_back(g.add_input(value_name("w", d, k), data.shapes[k], data.dtypes[k]));
    return values.emplace(d, std::move(refs)).first->second;
  };
  auto inside = [&](ClassId d) { return in_window[d] && used[d]; };
  // The window's classes this selection uses, children first.
  enum : char { kNew, kOpen, kDone };
  std::unordered_map<ClassId, char> state;
  for (ClassId start : classes) {
    if (!inside(start) || state[start] != kNew) continue;
    std::vector<std::pair<ClassId, size_t>> stack{{start, 0}};
    state[start] = kOpen;
    while (!stack.empty()) {
      auto& [c, next_child] = stack.back();
      const ENode& n = egraph_.eclass(c).nodes.at(static_cast<size_t>(selection(c)));
      if (next_child < n.children.size()) {
        const ClassId d = egraph_.find(n.children[next_child++]);
        if (!inside(d)) continue;
        char& s = state[d];
        if (s == kOpen) throw std::logic_error("refinement window: the choice is cyclic at " + egraph_.describe(d));
        if (s == kNew) {
          s = kOpen;
          stack.emplace_back(d, 0);
        }
        continue;
      }
      const ClassId done = c;
      switch (n.kind) {
        case NodeKind::kInput: {
          const Node& in = egraph_.leaf(n.head);
          values[done] = {g.add_input(in.name, in.output_shapes[0], in.output_dtypes[0])};
          break;
        }
        case NodeKind::kConstant:
          values[done] = {g.add_shared_constant(egraph_.leaf(n.head))};
          break;
        case NodeKind::kProject: {
          const ClassId tuple = egraph_.find(n.children[0]);
          if (inside(tuple)) values[done] = {values.at(tuple).at(n.head)};
          else values[done] = {outside(done).at(0)};  // the tuple is outside: this value is read in
          break;
        }
        case NodeKind::kOp: {
          std::vector<ValueRef> operands;
          for (ClassId child : n.children) {
            child = egraph_.find(child);
            operands.push_back(inside(child) ? values.at(child).at(0) : outside(child).at(0));
          }
          const OpInstance& oi = egraph_.op_instance(n.head);
          const NodeLabel& label = egraph_.label(n.label);
          values[done] = g.find_or_add_op(*oi.op, oi.params, std::move(operands), label.name, label.value_names);
          break;
        }
      }
      state[done] = kDone;
      stack.pop_back();
    }
  }
  // Outputs: the roots (in order, as selection_graph has them), then every
  // other class read from outside the window (in class order, so both
  // windows list the same ones). Constant classes are not: they are folded.
  for (size_t k = 0; k < roots_.size(); ++k)
    if (inside(roots_[k])) g.add_output(values.at(roots_[k]).at(0), value_name("root", k, 0));
  for (ClassId c : classes) {
    if (!inside(c) || is_root_[c] || egraph_.data(c).constant) continue;
    bool read_outside = false;
    for (uint32_t k = reader_start_[c]; k < reader_start_[c + 1] && !read_outside; ++k)
      read_outside = !in_window[readers_[k]];
    if (!read_outside) continue;
    const std::vector<ValueRef>& refs = values.at(c);
    for (size_t k = 0; k < refs.size(); ++k) g.add_output(refs[k], value_name("o", c, k));
  }
  return g;
}

double SelectionWindows::delta(const Switches& switches) const {
  const ChoiceOf trial{&current_, &switches};
  std::vector<char> in_window, trial_used;
  const std::vector<ClassId> classes = window(trial, in_window, trial_used);
  const Graph before = window_graph(ChoiceOf{&current_, nullptr}, classes, in_window, used_);
  const Graph after = window_graph(trial, classes, in_window, trial_used);
  return model_.graph_cost(after) - model_.graph_cost(before);
}

double SelectionWindows::delta(const Selection& trial) const { return delta(switches_to(trial)); }

}  // namespace tgr::saturation
