#include "util/error.h"

// Out-of-line so the vtable of lumen::Error lives in one translation unit.
