// The report of an engine campaign as a conform report (format cutcheck-conform-engine-1:
// the keys of cutcheck-conform-2 plus the engine's description and per-position figures),
// which summary_table, junit_xml and html_report (report/report.h) render, one case per model.
#pragma once

#include "core/json.h"
#include "engine/engine_campaign.h"

namespace cutcheck {

Json engine_report_json(const EngineReport& report);

}  // namespace cutcheck
