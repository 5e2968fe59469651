#include "report/engine_report.h"

#include <algorithm>
#include <map>

#include "core/version.h"
#include "report/report.h"

namespace cutcheck {
namespace {

Json case_json(const EngineCaseResult& r) {
  Json errors = Json::array(), positions = Json::array();
  for (const OutputError& e : r.errors) errors.push_back(output_error_json(e));
  for (const PositionFigure& p : r.positions)
    positions.push_back({{"request", p.request}, {"position", p.position}, {"worst_abs", p.worst_abs},
                         {"bound", p.bound}, {"headroom", p.headroom}, {"top_bound", p.top_bound}, {"exact", p.exact}});
  return {{"index", r.index},       {"case", r.c.to_json()},          {"text", r.c.str()},
          {"kind", "engine"},       {"ctx", r.c.longest()},           {"rows", r.c.requests.size()},
          {"verdict", verdict_name(r.verdict)}, {"failure", r.failure}, {"failure_type", r.failure_type},
          {"fault", r.process_failure},  // the key keeps its name for compatibility
                {"stderr_tail", r.stderr_tail},   {"errors", errors},
          {"ties", r.ties},         {"positions", positions},         {"seconds", r.seconds}};
}

}  // namespace

Json engine_report_json(const EngineReport& report) {
  const EngineCampaignOptions& o = report.options;
  Json cases = Json::array(), failures = Json::array();
  for (const EngineCaseResult& r : report.results) cases.push_back(case_json(r));
  for (const EngineFailure& f : report.failures)
    failures.push_back({{"index", f.original.index}, {"kind", "engine"}, {"original", case_json(f.original)},
                        {"shrunk", case_json(f.shrunk)}, {"shrink_runs", f.shrink_runs}, {"piece", ""}, {"value", ""},
                        {"reproducer", f.reproducer.string()}, {"command", f.command}});
  // Per position over every case: the worst |log p - log p_ref|, the bound and headroom of
  // the element that came closest to its bound, and the tightest bound of a top token.
  std::map<int64_t, Json> by_position;
  for (const EngineCaseResult& r : report.results)
    for (const PositionFigure& p : r.positions) {
      Json& b = by_position[p.position];
      if (b.is_null())
        b = {{"position", p.position}, {"compared", 0}, {"exact", 0}, {"worst_abs", 0.0}, {"bound", 0.0}, {"headroom", 0.0},
             {"top_bound", p.top_bound}};
      b["top_bound"] = std::min(b["top_bound"].get<double>(), p.top_bound);
      b["compared"] = b["compared"].get<int>() + 1;
      b["exact"] = b["exact"].get<int>() + (p.exact ? 1 : 0);
      b["worst_abs"] = std::max(b["worst_abs"].get<double>(), p.worst_abs);
      if (p.headroom >= b["headroom"].get<double>()) {
        b["headroom"] = p.headroom;
        b["bound"] = p.bound;
      }
    }
  Json positions = Json::array();
  for (auto& [p, b] : by_position) positions.push_back(b);
  int ties = 0;
  for (const EngineCaseResult& r : report.results) ties += int(r.ties.size());
  Json options = o.run.to_json();
  options.update({{"cases", o.cases},
                  {"spec", o.space.spec ? o.space.spec->to_json() : Json("random")},
                  {"ctx_max", o.space.ctx_max},
                  {"requests", o.space.requests},
                  {"steps_max", o.space.steps_max},
                  {"shrink", o.shrink},
                  {"shrink_budget", o.shrink_budget},
                  {"shrink_seconds", o.shrink_seconds}});
  Json out = {{"format", "cutcheck-conform-engine-1"},
              {"cutcheck", {{"version", version()}, {"commit", version_commit()}}},
              {"backend", report.engine},
              {"engine", report.description.to_json()},
              {"seed", o.seed},
              {"tolerance", tolerance_json(Tolerance::bound(o.run.precision.compute()))},
              {"options", options},
              {"run", {{"started", report.started}, {"host", report.host}, {"jobs", o.jobs}, {"shard", "1/1"},
                       {"seconds", report.seconds}}},
              {"planned", o.cases},
              {"finished", report.finished},
              {"stopped", report.stopped},
              {"interrupted", report.interrupted},
              {"failures", failures},
              {"cases", cases},
              {"ties", ties},
              {"by_position", positions}};
  complete_report(out);
  return out;
}

}  // namespace cutcheck
