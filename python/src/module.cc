// lumen._lumen: the extension module. Every lumen::Error (bad input: a file, a prompt, a
// parameter; lumen/error.h) becomes lumen.LumenError, a subclass of ValueError, carrying Lumen's
// one-line message; a wrong Python type is nanobind's TypeError; anything else is RuntimeError.
#include <nanobind/nanobind.h>

#include "lumen/error.h"
#include "bindings.h"

NB_MODULE(_lumen, m) {
  m.doc() = "Lumen's engine, bound with nanobind (use the lumen package, not this module).";
  nanobind::exception<lumen::Error>(m, "LumenError", PyExc_ValueError);
  m.attr("LumenError").attr("__doc__") =
      "What Lumen refuses (a model file, a prompt, a parameter), with Lumen's one-line message. "
      "A subclass of ValueError.";
  // An engine still referenced when the interpreter exits (a global, or an AsyncEngine shut down
  // by its atexit hook) is released after nanobind's leak check: not a leak worth a warning.
  nanobind::set_leak_warnings(false);
  lumen::python::bind_sampling_params(m);
  lumen::python::bind_engine(m);
}
