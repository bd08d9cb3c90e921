#pragma once
// Reads GGUF metadata values from an untrusted cursor. Internal to the gguf module.
#include "gguf/byte_cursor.h"
#include "gguf/value.h"

namespace lumen::gguf {

// Reads a u32 type tag and rejects ids outside the 13 the format defines.
ValueType read_value_type(ByteCursor& cursor, std::string_view what);
// Reads one value of `type`; `what` names it in errors (usually the key).
Value read_value(ByteCursor& cursor, ValueType type, std::string_view what, int depth = 0);

}  // namespace lumen::gguf
