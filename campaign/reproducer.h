// Reproducer folders: what a campaign keeps of a shrunk failure, and replaying one.
#pragma once

#include <string>

#include "campaign/campaign.h"

namespace cutcheck {

// Copies the failing evaluation's files from `work` into f.reproducer, with case.json
// and a report.txt that says how to re-run it: by the campaign's command, and by hand
// with `command` (Backend::command(); no line for an in-process backend).
void write_reproducer(const Failure& f, const ConformOptions& o, const fs::path& work, const std::string& command);

}  // namespace cutcheck
