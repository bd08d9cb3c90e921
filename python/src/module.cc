// lumen._lumen: the extension module. Every lumen::Error (bad input: a file, a prompt, a
// parameter; lumen/error.h) becomes lumen.LumenError, a subclass of ValueError, carrying Lumen's
// one-line message; a wrong Python type is nanobind's TypeError; anything else is RuntimeError.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "cli/closest_name.h"
#include "cli/default_model.h"
#include "lumen/error.h"

NB_MODULE(_lumen, m) {
  m.doc() = "Lumen's engine, bound with nanobind (use the lumen package, not this module).";
  nanobind::exception<lumen::Error>(m, "LumenError", PyExc_ValueError);
  m.attr("LumenError").attr("__doc__") =
      "What Lumen refuses (a model file, a prompt, a parameter), with Lumen's one-line message. "
      "A subclass of ValueError.";
  // An engine still referenced when the interpreter exits (a global, or an AsyncEngine shut down
  // by its atexit hook) is released after nanobind's leak check: not a leak worth a warning.
  nanobind::set_leak_warnings(false);
  // What `lumen run -m` takes: a path, or a catalog name (`smollm2`) resolved to its file in the
  // cache, with an error that says `lumen pull NAME` when it is not there (cli/default_model.h).
  m.def("_resolve_model_path", &lumen::cli::resolve_model_path, nanobind::arg("given"));
  // The CLI's did-you-mean (by prefix or a small edit distance), for misspelled keywords.
  m.def("_closest_name", &lumen::cli::closest_name, nanobind::arg("typed"), nanobind::arg("known"));
  lumen::python::bind_sampling_params(m);
  lumen::python::bind_engine(m);
}
