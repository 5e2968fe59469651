// Tasks run in forked worker processes, for work that keeps its state in statics and so
// runs one task per process at a time (RapidCheck's generation context: `check --jobs`
// checks properties this way). Worker k sets itself up once and runs tasks k, k + jobs,
// k + 2 jobs, ..., sending each result back to the parent as one JSON line; the parent
// passes the results on in task order, so that nothing depends on `jobs`. A signal is
// forwarded to the workers, which stop and report, and then thrown as Interrupted.
#pragma once

#include <functional>
#include <string>

#include "core/json.h"

namespace cutcheck {

// Runs tasks 0 .. count-1 in `jobs` worker processes (jobs <= 1: in this process, in order).
// `make_worker` is called once in each worker and returns the function that runs one task.
// `done` is called in the parent, in task order. A worker that fails (cutcheck's own error,
// printed by the worker) throws Error once every worker has stopped.
// `names` says who runs what in cutcheck's own errors: "check --jobs: a worker stopped
// after 3 of 9 properties", "cutcheck check worker: ...".
struct WorkerNames {
  std::string command;  // "check --jobs"
  std::string worker;   // "check"
  std::string tasks;    // "properties"
};
void run_in_worker_processes(size_t count, int jobs, const std::function<std::function<Json(size_t task)>()>& make_worker,
                             const std::function<void(size_t task, const Json& result)>& done, const WorkerNames& names);

}  // namespace cutcheck
