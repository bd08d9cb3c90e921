#pragma once
// The parts of the extension module lumen._lumen, each bound in its own file; module.cc puts
// them together. The Python package (python/lumen) wraps them in vLLM's API.
#include <nanobind/nanobind.h>

namespace lumen::python {

void bind_sampling_params(nanobind::module_& m);  // SamplingParams, StructuredOutputsParams
void bind_engine(nanobind::module_& m);           // _Engine, _Request, _Completion

}  // namespace lumen::python
