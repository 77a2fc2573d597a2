#include "model/journal.h"

namespace graphcap::testing::model {

void Journal::diverge(const std::string& what) {
  if (divergence_.empty()) divergence_ = what;
  log_ << "  DIVERGED: " << what << "\n";
}

}  // namespace graphcap::testing::model
