#include "opprof/anomaly/anomalies.hpp"

#include <algorithm>

namespace opprof {

void Anomalies::record(AnomalyKind kind, std::string detail) {
  Entry& e = entries_[static_cast<std::size_t>(kind)];
  ++e.count;
  if (e.details.size() < kMaxDetails) e.details.push_back(std::move(detail));
}

void Anomalies::add(const Anomalies& other, std::string_view prefix) {
  for (std::size_t k = 0; k < entries_.size(); ++k) {
    Entry& e = entries_[k];
    const Entry& o = other.entries_[k];
    e.count += o.count;
    for (const std::string& d : o.details)
      if (e.details.size() < kMaxDetails) e.details.push_back(std::string(prefix) + d);
  }
}

bool Anomalies::empty() const {
  return std::all_of(entries_.begin(), entries_.end(), [](const Entry& e) { return e.count == 0; });
}

}  // namespace opprof
