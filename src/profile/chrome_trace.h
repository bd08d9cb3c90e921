#pragma once
// One recorded step as a Chrome trace (the JSON "Trace Event Format" that chrome://tracing and
// ui.perfetto.dev open): a track of the ops as the model code called them, and one track per
// worker thread with its task spans, each named after the op it ran inside. Gaps in a worker's
// track are its idle time.
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "profile/op_record.h"

namespace lumen::profile {

// The events of one step as process `pid` named `title`; append several steps' events to one
// "traceEvents" array to see them side by side.
nlohmann::json chrome_trace_events(const StepRecording& step, const std::function<std::string(uint32_t)>& op_name,
                                   const std::string& title, int pid);
// A whole trace document around events.
nlohmann::json chrome_trace_document(nlohmann::json events);

}  // namespace lumen::profile
