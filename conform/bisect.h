// Bisecting a failing whole cut: which of its pieces (embed, layer i, head) is the first to
// fail on its own.
#pragma once

#include <string>

#include "conform/campaign.h"

namespace cutcheck {

// The first piece of a failing whole cut that fails on its own, fed the reference's
// values for everything before it; "" for a cut that is already a piece.
std::string bisect(Backend& backend, const Case& c, const ConformOptions& o, const fs::path& work);

}  // namespace cutcheck
