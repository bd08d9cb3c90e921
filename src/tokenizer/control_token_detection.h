#pragma once
// Control tokens recognised by their text. Many GGUF converters mark chat-turn and
// end-of-generation tokens ("<|im_end|>", "<end_of_turn>", "</s>", ...) as ordinary or
// user-defined tokens. llama.cpp, our reference, recognises them by text, treats them as
// control tokens (so user text spelling them stays text unless special parsing is asked for)
// and stops generation on them. Lumen does the same, from the same lists of texts.
#include "tokenizer/vocab.h"

namespace lumen::tokenizer {

// Marks the recognised tokens Control in vocab.types and fills vocab.end_of_generation.
void detect_control_tokens(Vocab& vocab);

}  // namespace lumen::tokenizer
