// Judging one run of a backend: its outputs against what the reference expects, within the tolerance.
#pragma once

#include "campaign/campaign.h"

namespace cutcheck {

// Runs `cut` on the backend; fills `r` with the verdict against `want`. Cache rows past
// what the case reads are left out of the comparison (blank_unattended). The backend's
// outputs are written to `actual` unless it is empty.
void judge(Backend& backend, const Case& c, const Cut& cut, int64_t tp, const fs::path& folder, const TensorMap& in,
           const Expected& want, const Tolerance& tol, CaseResult& r, const fs::path& actual);

}  // namespace cutcheck
