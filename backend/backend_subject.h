// A backend as the subject of the property catalog (`cutcheck check --backend`): the
// properties that compare runs with one another (Property::backend) run their cuts on the
// backend, and the reference only says how far two runs may differ (the bounds of the
// cuts they compute, properties/agreement.h).
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "backend/backend.h"
#include "backend/process_failure_stop.h"
#include "properties/subject.h"

namespace cutcheck {

struct BackendSubjectOptions {
  std::optional<ModelSpec> spec;  // a fixed spec; small random ones when unset
  fs::path weights;               // with `spec`: these weights instead of seeded ones
  std::vector<int64_t> tp{2};     // the widths tp.split_equals_unsplit splits over
  Tolerance tolerance = Tolerance::bound(Precision::f32);
  fs::path work;                  // each runner writes its programs and weights in a folder under it
  bool keep = false;              // leave those folders (a reproducer's); else each goes with its runner
  // Runs after which a backend that failed every one of them the same way (backend/process_failure_stop.h)
  // has its later runs skipped; 0: never.
  int same_failure_limit = 3;
};

// Throws Error when no width in `tp` splits the fixed spec. `gate`, when given, receives
// the process-failure gate every runner of the subject shares (ProcessFailureGate::stopped
// tells afterwards whether it skipped runs).
Subject backend_subject(Backend& backend, const BackendSubjectOptions& options,
                        std::shared_ptr<ProcessFailureGate>* gate = nullptr);

}  // namespace cutcheck
