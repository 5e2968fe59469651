// Merging the JSON reports of the shards of one campaign (conform --shard I/N) into the
// report the unsharded campaign would have written: its cases in order, the first failure
// of each cut kind (each shrunk by the shard that found it), the same counts and summary.
#pragma once

#include <string>
#include <vector>

#include "core/json.h"

namespace cutcheck {

struct ShardReport {
  Json report;         // a cutcheck-conform-2 document
  std::string source;  // where it came from, for messages
};

// Throws Error naming the file when the reports are not the shards of one campaign (other
// backend, seed, options, tolerance or cutcheck version), a shard is missing or given
// twice, or a case turns up in two shards.
Json merge_reports(const std::vector<ShardReport>& shards);

}  // namespace cutcheck
