#include "opprof/anomaly/anomalies.hpp"

#include <algorithm>

namespace opprof {

void Anomalies::record(AnomalyKind kind, std::string detail) {
  Entry& e = entries_[static_cast<std::size_t>(kind)];
  ++e.count;
  if (e.details.size() < kMaxDetails) e.details.push_back(std::move(detail));
}

bool Anomalies::empty() const {
  return std::all_of(entries_.begin(), entries_.end(), [](const Entry& e) { return e.count == 0; });
}

}  // namespace opprof
