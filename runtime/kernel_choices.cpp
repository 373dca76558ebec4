#include "runtime/kernel_choices.h"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace tgr {

std::string TimedChoice::to_text() const {
  char ms_text[64];
  std::snprintf(ms_text, sizeof ms_text, "%.9g", ms);
  return std::to_string(implementation) + " " + std::to_string(workspace) + " " + ms_text;
}

std::optional<TimedChoice> TimedChoice::parse(const std::string& text) {
  std::istringstream in(text);
  TimedChoice c;
  if (!(in >> c.implementation >> c.workspace >> c.ms)) return std::nullopt;
  in >> std::ws;
  if (!in.eof() || c.workspace < 0 || !std::isfinite(c.ms) || c.ms < 0) return std::nullopt;
  return c;
}

KernelChoices& KernelChoices::process() {
  static KernelChoices choices;
  return choices;
}

std::optional<std::string> KernelChoices::find(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

void KernelChoices::put(const std::string& key, const std::string& value) {
  std::lock_guard<std::mutex> lock(mutex_);
  entries_[key] = value;
  added_.insert(key);
}

void KernelChoices::seed(const std::vector<Entry>& entries) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [key, value] : entries) entries_.emplace(key, value);
}

std::vector<KernelChoices::Entry> KernelChoices::take_added() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Entry> out;
  for (const std::string& key : added_) out.emplace_back(key, entries_.at(key));
  added_.clear();
  return out;
}

size_t KernelChoices::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

void KernelChoices::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.clear();
  added_.clear();
}

}  // namespace tgr
