#include "chat/builtin_templates.h"

#include <array>
#include <utility>

namespace lumen::chat {

namespace {

// Each template is written for Lumen in plain Jinja: every piece of output is an expression, and
// every tag trims the whitespace around it, so the layout of this file never leaks into prompts.
// The wire format (role markers, tool-prompt wording, quirks such as where a template folds
// the system prompt) is what each model family was trained on; the golden test
// (tests/python/test_chat_templates.py) pins each one to its vendor template.

// ChatML: <|im_start|>role\ncontent<|im_end|>\n per message (SmolLM2, many fine-tunes).
constexpr std::string_view kChatml = R"JINJA(
{%- for m in messages -%}
  {{- '<|im_start|>' + m.role + '\n' + m.content + '<|im_end|>\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}
  {{- '<|im_start|>assistant\n' -}}
{%- endif -%}
)JINJA";

// Llama 3.1 / 3.3 instruct: header-delimited turns, a dated system block, JSON tool calls,
// tool definitions in the first user turn unless tools_in_user_message is false.
constexpr std::string_view kLlama3 = R"JINJA(
{{- bos_token -}}
{%- if custom_tools is defined -%}{%- set tools = custom_tools -%}{%- endif -%}
{%- if tools is not defined -%}{%- set tools = none -%}{%- endif -%}
{%- set tools_in_user = tools_in_user_message if tools_in_user_message is defined else true -%}
{%- set today = date_string if date_string is defined else '26 Jul 2024' -%}
{%- set call_format = 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.Do not use variables.\n\n' -%}
{%- if messages[0].role == 'system' -%}
  {%- set system_text = messages[0].content | trim -%}
  {%- set messages = messages[1:] -%}
{%- else -%}
  {%- set system_text = '' -%}
{%- endif -%}
{{- '<|start_header_id|>system<|end_header_id|>\n\n' -}}
{%- if builtin_tools is defined or tools is not none -%}{{- 'Environment: ipython\n' -}}{%- endif -%}
{%- if builtin_tools is defined -%}
  {{- 'Tools: ' + builtin_tools | reject('equalto', 'code_interpreter') | join(', ') + '\n\n' -}}
{%- endif -%}
{{- 'Cutting Knowledge Date: December 2023\nToday Date: ' + today + '\n\n' -}}
{%- if tools is not none and not tools_in_user -%}
  {{- 'You have access to the following functions. To call a function, please respond with JSON for a function call.' + call_format -}}
  {%- for t in tools -%}{{- t | tojson(indent=4) + '\n\n' -}}{%- endfor -%}
{%- endif -%}
{{- system_text + '<|eot_id|>' -}}
{%- if tools_in_user and tools is not none -%}
  {%- if messages | length == 0 -%}
    {{- raise_exception("Cannot put tools in the first user message when there's no first user message!") -}}
  {%- endif -%}
  {{- '<|start_header_id|>user<|end_header_id|>\n\nGiven the following functions, please respond with a JSON for a function call with its proper arguments that best answers the given prompt.\n\n' + call_format -}}
  {%- for t in tools -%}{{- t | tojson(indent=4) + '\n\n' -}}{%- endfor -%}
  {{- (messages[0].content | trim) + '<|eot_id|>' -}}
  {%- set messages = messages[1:] -%}
{%- endif -%}
{%- for m in messages -%}
  {%- if m.role not in ['ipython', 'tool'] and 'tool_calls' not in m -%}
    {{- '<|start_header_id|>' + m.role + '<|end_header_id|>\n\n' + m.content | trim + '<|eot_id|>' -}}
  {%- elif 'tool_calls' in m -%}
    {%- if m.tool_calls | length != 1 -%}
      {{- raise_exception('This model only supports single tool-calls at once!') -}}
    {%- endif -%}
    {%- set call = m.tool_calls[0].function -%}
    {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}
    {%- if builtin_tools is defined and call.name in builtin_tools -%}
      {{- '<|python_tag|>' + call.name + '.call(' -}}
      {%- for name, value in call.arguments | items -%}
        {{- name + '="' + value + '"' + ('' if loop.last else ', ') -}}
      {%- endfor -%}
      {{- ')' -}}
    {%- else -%}
      {{- '{"name": "' + call.name + '", "parameters": ' + call.arguments | tojson + '}' -}}
    {%- endif -%}
    {{- '<|eom_id|>' if builtin_tools is defined else '<|eot_id|>' -}}
  {%- else -%}
    {{- '<|start_header_id|>ipython<|end_header_id|>\n\n' -}}
    {%- if m.content is mapping or m.content is iterable -%}{{- m.content | tojson -}}
    {%- else -%}{{- m.content -}}{%- endif -%}
    {{- '<|eot_id|>' -}}
  {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}{%- endif -%}
)JINJA";

// Gemma 3: user/model turns that must alternate; a system message becomes the start of the
// first user turn (Gemma has no system role); content may be a string or a list of parts.
constexpr std::string_view kGemma = R"JINJA(
{{- bos_token -}}
{%- if messages[0].role == 'system' -%}
  {%- set system = messages[0].content if messages[0].content is string else messages[0].content[0].text -%}
  {%- set first_prefix = system + '\n\n' -%}
  {%- set turns = messages[1:] -%}
{%- else -%}
  {%- set first_prefix = '' -%}
  {%- set turns = messages -%}
{%- endif -%}
{%- for m in turns -%}
  {%- if (m.role == 'user') != (loop.index0 % 2 == 0) -%}
    {{- raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') -}}
  {%- endif -%}
  {{- '<start_of_turn>' + ('model' if m.role == 'assistant' else m.role) + '\n' -}}
  {{- first_prefix if loop.first else '' -}}
  {%- if m.content is string -%}
    {{- m.content | trim -}}
  {%- elif m.content is iterable -%}
    {%- for part in m.content -%}
      {%- if part.type == 'image' -%}{{- '<start_of_image>' -}}
      {%- elif part.type == 'text' -%}{{- part.text | trim -}}{%- endif -%}
    {%- endfor -%}
  {%- else -%}
    {{- raise_exception('Invalid content type') -}}
  {%- endif -%}
  {{- '<end_of_turn>\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<start_of_turn>model\n' -}}{%- endif -%}
)JINJA";

// Qwen 2.5: ChatML with a default system prompt, tools listed in the system turn, calls in
// <tool_call> tags and consecutive tool results grouped into one user turn.
constexpr std::string_view kQwen25 = R"JINJA(
{%- set default_system = 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' -%}
{%- set has_system = messages[0].role == 'system' -%}
{%- if tools -%}
  {{- '<|im_start|>system\n' -}}
  {{- messages[0].content if has_system else default_system -}}
  {{- '\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>' -}}
  {%- for t in tools -%}{{- '\n' + t | tojson -}}{%- endfor -%}
  {{- '\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n' -}}
{%- else -%}
  {{- '<|im_start|>system\n' + (messages[0].content if has_system else default_system) + '<|im_end|>\n' -}}
{%- endif -%}
{%- for m in messages -%}
  {%- if m.role == 'user' or (m.role == 'system' and not loop.first) or (m.role == 'assistant' and not m.tool_calls) -%}
    {{- '<|im_start|>' + m.role + '\n' + m.content + '<|im_end|>\n' -}}
  {%- elif m.role == 'assistant' -%}
    {{- '<|im_start|>assistant' -}}
    {%- if m.content -%}{{- '\n' + m.content -}}{%- endif -%}
    {%- for call in m.tool_calls -%}
      {%- set fn = call.function if call.function is defined else call -%}
      {{- '\n<tool_call>\n{"name": "' -}}{{- fn.name -}}
      {{- '", "arguments": ' + fn.arguments | tojson + '}\n</tool_call>' -}}
    {%- endfor -%}
    {{- '<|im_end|>\n' -}}
  {%- elif m.role == 'tool' -%}
    {%- if loop.first or loop.previtem.role != 'tool' -%}{{- '<|im_start|>user' -}}{%- endif -%}
    {{- '\n<tool_response>\n' -}}{{- m.content -}}{{- '\n</tool_response>' -}}
    {%- if loop.last or loop.nextitem.role != 'tool' -%}{{- '<|im_end|>\n' -}}{%- endif -%}
  {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\n' -}}{%- endif -%}
)JINJA";

// Mistral (Nemo-style v3 tekken): [INST] turns, the system prompt joined to the last user
// turn, [AVAILABLE_TOOLS] before the last user turn, 9-character tool call ids.
constexpr std::string_view kMistral = R"JINJA(
{%- if messages[0].role == 'system' -%}
  {%- set system_message = messages[0].content -%}
  {%- set turns = messages[1:] -%}
{%- else -%}
  {%- set turns = messages -%}
{%- endif -%}
{%- if tools is not defined -%}{%- set tools = none -%}{%- endif -%}
{%- set last_user = turns | selectattr('role', 'equalto', 'user') | list | last -%}
{%- set ns = namespace(turn=0) -%}
{%- for m in turns -%}
  {%- if not (m.role in ['tool', 'tool_results'] or (m.tool_calls is defined and m.tool_calls is not none)) -%}
    {%- if (m.role == 'user') != (ns.turn % 2 == 0) -%}
      {{- raise_exception('After the optional system message, conversation roles must alternate user/assistant/user/assistant/...') -}}
    {%- endif -%}
    {%- set ns.turn = ns.turn + 1 -%}
  {%- endif -%}
{%- endfor -%}
{%- set bad_id = 'Tool call IDs should be alphanumeric strings with length 9!' -%}
{{- bos_token -}}
{%- for m in turns -%}
  {%- if m.role == 'user' -%}
    {%- if tools is not none and m == last_user -%}
      {{- '[AVAILABLE_TOOLS][' -}}
      {%- for t in tools -%}
        {{- '{"type": "function", "function": {' -}}
        {%- for key, val in t.function.items() if key != 'return' -%}
          {{- '"' + key + '": ' + ('"' + val + '"' if val is string else val | tojson) -}}
          {{- '' if loop.last else ', ' -}}
        {%- endfor -%}
        {{- '}}' + (']' if loop.last else ', ') -}}
      {%- endfor -%}
      {{- '[/AVAILABLE_TOOLS]' -}}
    {%- endif -%}
    {%- if loop.last and system_message is defined -%}
      {{- '[INST]' + system_message + '\n\n' + m.content + '[/INST]' -}}
    {%- else -%}
      {{- '[INST]' + m.content + '[/INST]' -}}
    {%- endif -%}
  {%- elif m.tool_calls is defined and m.tool_calls is not none -%}
    {{- '[TOOL_CALLS][' -}}
    {%- for call in m.tool_calls -%}
      {{- (call.function | tojson)[:-1] -}}
      {%- if call.id is not defined or call.id | length != 9 -%}{{- raise_exception(bad_id) -}}{%- endif -%}
      {{- ', "id": "' + call.id + '"}' + (']' + eos_token if loop.last else ', ') -}}
    {%- endfor -%}
  {%- elif m.role == 'assistant' -%}
    {{- m.content + eos_token -}}
  {%- elif m.role in ['tool', 'tool_results'] -%}
    {%- set result = m.content.content if (m.content is defined and m.content.content is defined) else m.content -%}
    {{- '[TOOL_RESULTS]{"content": ' + result | string + ', ' -}}
    {%- if m.tool_call_id is not defined or m.tool_call_id | length != 9 -%}{{- raise_exception(bad_id) -}}{%- endif -%}
    {{- '"call_id": "' + m.tool_call_id + '"}[/TOOL_RESULTS]' -}}
  {%- else -%}
    {{- raise_exception('Only user and assistant roles are supported, with the exception of an initial optional system message!') -}}
  {%- endif -%}
{%- endfor -%}
)JINJA";

// Phi-3 / 3.5: <|role|>\n ... <|end|>\n, empty system prompts dropped, eos when not prompting.
constexpr std::string_view kPhi3 = R"JINJA(
{%- for m in messages -%}
  {%- if m.role == 'system' and m.content -%}
    {{- '<|system|>\n' + m.content + '<|end|>\n' -}}
  {%- elif m.role in ['user', 'assistant'] -%}
    {{- '<|' + m.role + '|>\n' + m.content + '<|end|>\n' -}}
  {%- endif -%}
{%- endfor -%}
{{- '<|assistant|>\n' if add_generation_prompt else eos_token -}}
)JINJA";

// DeepSeek R1 (distilled models): system prompt first, fullwidth-bar markers, reasoning
// (<think>...</think>) removed from earlier assistant turns, tool calls and outputs in blocks.
constexpr std::string_view kDeepseek = R"JINJA(
{%- set ns = namespace(called=false, in_tool=false, first_output=true, system='') -%}
{%- for m in messages -%}
  {%- if m.role == 'system' -%}{%- set ns.system = m.content -%}{%- endif -%}
{%- endfor -%}
{{- bos_token -}}{{- ns.system -}}
{%- for m in messages -%}
  {%- if m.role == 'user' -%}
    {%- set ns.in_tool = false -%}
    {{- '<｜User｜>' + m.content -}}
  {%- endif -%}
  {%- if m.role == 'assistant' and m.tool_calls -%}
    {%- set ns.in_tool = false -%}
    {%- for call in m.tool_calls -%}
      {{- '<｜Assistant｜><｜tool▁calls▁begin｜>' if not ns.called else '\n' -}}
      {{- '<｜tool▁call▁begin｜>' + call.type + '<｜tool▁sep｜>' + call.function.name + '\n```json\n' -}}
      {{- call.function.arguments | tojson + '\n```<｜tool▁call▁end｜>' -}}
      {%- set ns.called = true -%}
    {%- endfor -%}
    {{- '<｜tool▁calls▁end｜><｜end▁of▁sentence｜>' -}}
  {%- endif -%}
  {%- if m.role == 'assistant' and m.content is not none -%}
    {%- if ns.in_tool -%}
      {{- '<｜tool▁outputs▁end｜>' + m.content + '<｜end▁of▁sentence｜>' -}}
      {%- set ns.in_tool = false -%}
    {%- else -%}
      {%- set answer = m.content.split('</think>')[-1] if '</think>' in m.content else m.content -%}
      {{- '<｜Assistant｜>' + answer + '<｜end▁of▁sentence｜>' -}}
    {%- endif -%}
  {%- endif -%}
  {%- if m.role == 'tool' -%}
    {%- set ns.in_tool = true -%}
    {{- '<｜tool▁outputs▁begin｜>' if ns.first_output else '\n' -}}
    {{- '<｜tool▁output▁begin｜>' + m.content + '<｜tool▁output▁end｜>' -}}
    {%- set ns.first_output = false -%}
  {%- endif -%}
{%- endfor -%}
{%- if ns.in_tool -%}{{- '<｜tool▁outputs▁end｜>' -}}{%- endif -%}
{%- if add_generation_prompt and not ns.in_tool -%}
  {{- '<｜Assistant｜><think>\n' -}}
  {%- if not enable_thinking -%}{{- '</think>' -}}{%- endif -%}
{%- endif -%}
)JINJA";

constexpr std::array<std::pair<std::string_view, std::string_view>, 7> kTemplates = {{
    {"chatml", kChatml},
    {"llama3", kLlama3},
    {"gemma", kGemma},
    {"qwen2.5", kQwen25},
    {"mistral", kMistral},
    {"phi3", kPhi3},
    {"deepseek", kDeepseek},
}};

}  // namespace

std::optional<std::string_view> builtin_chat_template(std::string_view name) {
  for (const auto& [n, text] : kTemplates) {
    if (n == name) return text;
  }
  return std::nullopt;
}

std::vector<std::string_view> builtin_chat_template_names() {
  std::vector<std::string_view> names;
  for (const auto& [n, text] : kTemplates) names.push_back(n);
  return names;
}

std::optional<std::string_view> builtin_chat_template_name_for_architecture(std::string_view architecture) {
  // Only families with exactly one chat format: a llama file could be any of several.
  if (architecture == "gemma" || architecture == "gemma2" || architecture == "gemma3") return "gemma";
  return std::nullopt;
}

}  // namespace lumen::chat
