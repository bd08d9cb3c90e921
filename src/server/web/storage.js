// The chat page's storage and settings (index.html loads it before app.js): conversations and
// settings in this browser's localStorage, the settings form, and the request body built from
// them. Classic scripts share one global scope, so app.js and images.js call these directly.
"use strict";

const STORE_KEYS = { conversations: "lumen.conversations", settings: "lumen.settings", apiKey: "lumen.apiKey" };

// ---------------------------------------------------------------------------------------------
// Storage: conversations are [{ id, title, updated, messages: [{ role, content, reasoning?, stats? }] }]
// (reasoning: an answer's reasoning_content, when the model thought before answering).

function loadJson(key, fallback) {
  try {
    const value = JSON.parse(localStorage.getItem(key));
    return value ?? fallback;
  } catch {
    return fallback;  // unreadable (edited by hand, or another page's data): start afresh
  }
}

function saveJson(key, value) {
  try {
    localStorage.setItem(key, JSON.stringify(value));
  } catch (e) {
    showError(`Could not save in this browser's storage: ${e.message}`);
  }
}

const state = {
  conversations: [],
  currentId: null,
  controller: null,  // the AbortController of the answer being streamed
  streamingId: null,  // the conversation that answer belongs to
  failure: null,  // { id: the conversation, message }: the last send that failed, shown with Retry
  model: "",  // the served model's name, from /v1/models
};

// An assistant turn with no text (a send that failed, or was stopped, before its first token) is
// never kept: it would only be an empty turn in the history. One cut off while thinking is.
const keptMessage = (m) => m.role !== "assistant" || m.content !== "" || Boolean(m.reasoning);

function loadConversations() {
  const stored = loadJson(STORE_KEYS.conversations, []);
  // Whatever is stored is checked: the page must open even over data it did not write.
  const isMessage = (m) => m && (m.role === "user" || m.role === "assistant") && typeof m.content === "string" &&
    (m.reasoning === undefined || typeof m.reasoning === "string");
  state.conversations = Array.isArray(stored)
    ? stored.filter((c) => c && typeof c.id === "string" && Array.isArray(c.messages) && c.messages.every(isMessage))
    : [];
  for (const c of state.conversations) c.messages = c.messages.filter(keptMessage);  // older pages kept some
  state.conversations.sort((a, b) => (b.updated || 0) - (a.updated || 0));
  state.currentId = state.conversations.length ? state.conversations[0].id : null;
}

function saveConversations() {
  const kept = state.conversations.map((c) => ({ ...c, messages: c.messages.filter(keptMessage) }));
  try {
    localStorage.setItem(STORE_KEYS.conversations, JSON.stringify(kept));
  } catch {
    // Images fill a browser's few MiB of storage quickly: then the text is kept without them.
    saveJson(STORE_KEYS.conversations, chatImages.withoutImages(kept));
  }
}

function currentConversation() {
  return state.conversations.find((c) => c.id === state.currentId) || null;
}

// ---------------------------------------------------------------------------------------------
// Settings: the sampling fields and the system prompt, kept across visits. An empty field is not
// sent, so the server's defaults apply: the one set the CLI and Python use too
// (docs/sampling-defaults.md).

const $ = (id) => document.getElementById(id);
const SETTING_FIELDS = ["system-prompt", "temperature", "top-p", "max-tokens", "seed"];

function loadSettings() {
  const saved = loadJson(STORE_KEYS.settings, {});
  for (const id of SETTING_FIELDS) {
    if (typeof saved[id] === "string") $(id).value = saved[id];
  }
  $("api-key").value = localStorage.getItem(STORE_KEYS.apiKey) || "";
}

function saveSettings() {
  const values = {};
  for (const id of SETTING_FIELDS) values[id] = $(id).value;
  saveJson(STORE_KEYS.settings, values);
  try {
    localStorage.setItem(STORE_KEYS.apiKey, $("api-key").value);
  } catch (e) {
    showError(`Could not save in this browser's storage: ${e.message}`);
  }
}

function headers() {
  const result = { "Content-Type": "application/json" };
  const key = $("api-key").value.trim();
  if (key) result.Authorization = `Bearer ${key}`;
  return result;
}

function requestBody(conversation) {
  const messages = [];
  const system = $("system-prompt").value.trim();
  if (system) messages.push({ role: "system", content: system });
  // Earlier answers go back without their reasoning, as OpenAI's clients send them (the templates
  // of reasoning models drop it from earlier turns anyway); one cut off while thinking goes back
  // empty, so that the turns still alternate.
  for (const m of conversation.messages) {
    if (keptMessage(m)) messages.push({ role: m.role, content: chatImages.content(m) });
  }
  // A reasoning model's thinking comes apart from its answer (delta.reasoning_content), shown folded.
  const body = {messages, stream: true, stream_options: {include_usage: true}};
  const number = (id) => ($(id).value.trim() === "" ? null : Number($(id).value));
  const fields = { temperature: "temperature", top_p: "top-p", max_tokens: "max-tokens", seed: "seed" };
  for (const [field, id] of Object.entries(fields)) {
    const value = number(id);
    if (value !== null && Number.isFinite(value)) body[field] = value;
  }
  return body;
}
