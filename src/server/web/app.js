// Lumen's chat page: talks to the server's own OpenAI-compatible API (POST /v1/chat/completions
// with "stream": true, read as server-sent events), keeps conversations and settings in this
// browser's localStorage, and renders the model's Markdown safely: all text is HTML-escaped
// before any markup is added, so no model text ever reaches innerHTML unescaped.
"use strict";

// The Markdown renderer (renderMarkdown, escapeHtml) is markdown.js.

// Storage and settings (state, $, loadSettings, requestBody, ...) are storage.js.

// ---------------------------------------------------------------------------------------------
// Rendering the page.

function showError(message) {
  $("error").textContent = message;
  $("error").hidden = !message;
}

function statsText(stats) {
  const parts = [];
  if (Number.isFinite(stats.ttft_ms)) parts.push(`TTFT ${Math.round(stats.ttft_ms)} ms`);
  if (Number.isFinite(stats.tokens_per_s)) parts.push(`${stats.tokens_per_s.toFixed(1)} tok/s`);
  if (Number.isFinite(stats.tokens)) parts.push(`${stats.tokens} ${stats.tokens === 1 ? "token" : "tokens"}`);
  if (typeof stats.finish === "string" && stats.finish !== "stop") parts.push(stats.finish);
  return parts.join(" · ");
}

function button(label, className, onClick) {
  const element = document.createElement("button");
  element.type = "button";
  element.className = className;
  element.textContent = label;
  element.addEventListener("click", onClick);
  return element;
}

// The clipboard API needs a secure context (https, or this machine's own address); over plain
// http from another machine, or where the API refuses, the older execCommand("copy") still works.
function copyBySelection(text) {
  const area = document.createElement("textarea");
  area.value = text;
  area.className = "offscreen";
  document.body.append(area);
  area.select();
  let copied = false;
  try {
    copied = document.execCommand("copy");
  } catch {
    // copied stays false
  }
  area.remove();
  return copied;
}

async function copyText(text, source) {
  let copied = false;
  if (navigator.clipboard && window.isSecureContext) {
    copied = await navigator.clipboard.writeText(text).then(() => true, () => false);
  }
  if (!copied) copied = copyBySelection(text);
  source.textContent = copied ? "Copied" : "Copy failed";
  setTimeout(() => { source.textContent = "Copy"; }, 1500);
}

function renderMessageContent(element, message) {
  renderReasoning(element, message);
  const content = element.querySelector(".content");
  if (message.role === "assistant") {
    content.innerHTML = renderMarkdown(message.content);
    // Each code block gets a copy button in its corner (outside the <pre>, so it does not scroll).
    for (const pre of content.querySelectorAll("pre")) {
      const code = pre.textContent;
      const block = document.createElement("div");
      block.className = "code-block";
      pre.replaceWith(block);
      block.append(button("Copy", "copy-code", (event) => copyText(code, event.currentTarget)), pre);
    }
  } else {
    content.textContent = message.content;
  }
  const stats = element.querySelector(".stats");
  stats.textContent = message.stats && typeof message.stats === "object" ? statsText(message.stats) : "";
  stats.hidden = !stats.textContent;
}

// A reasoning model's thinking (the server's reasoning_content) in a fold above the answer, as
// plain text: open while the model thinks, folded once the answer starts, unless the reader has
// opened or closed it by hand.
function renderReasoning(element, message) {
  const fold = element.querySelector(".reasoning");
  if (!fold) return;
  fold.hidden = !message.reasoning;
  if (!message.reasoning) return;
  fold.querySelector(".reasoning-text").textContent = message.reasoning;
  if (!fold.dataset.touched) fold.open = message.content === "";
}

function reasoningFold() {
  const fold = document.createElement("details");
  fold.className = "reasoning";
  fold.hidden = true;
  const summary = document.createElement("summary");
  summary.textContent = "Reasoning";
  summary.addEventListener("click", () => { fold.dataset.touched = "1"; });
  const text = document.createElement("div");
  text.className = "reasoning-text";
  fold.append(summary, text);
  return fold;
}

// A message's element, with its actions: Copy on every message, Edit on the user's (the
// conversation is sent again from there), Regenerate on the last answer.
function messageElement(conversation, index) {
  const message = conversation.messages[index];
  const element = document.createElement("div");
  element.className = `message ${message.role}`;
  const role = document.createElement("div");
  role.className = "role";
  role.textContent = message.role === "user" ? "You" : "Assistant";
  const content = document.createElement("div");
  content.className = "content";
  const stats = document.createElement("div");
  stats.className = "stats";
  const actions = document.createElement("div");
  actions.className = "actions";
  actions.append(button("Copy", "copy", (event) => copyText(message.content, event.currentTarget)));
  if (message.role === "user") {
    actions.append(button("Edit", "edit", () => startEdit(element, conversation, index)));
  } else if (index === conversation.messages.length - 1) {
    actions.append(button("Regenerate", "regenerate", () => regenerate(conversation)));
  }
  const images = chatImages.element(message);
  const reasoning = message.role === "assistant" ? [reasoningFold()] : [];
  element.append(role, ...(images ? [images] : []), ...reasoning, content, stats, actions);
  renderMessageContent(element, message);
  return element;
}

// Editing a user message in place: sending it drops everything after it and answers again.
function startEdit(element, conversation, index) {
  if (state.controller) return;
  const box = document.createElement("textarea");
  box.className = "edit-box";
  box.value = conversation.messages[index].content;
  box.rows = Math.min(10, box.value.split("\n").length + 1);
  const submit = () => {
    const text = box.value.trim();
    if (!text || state.controller) return;
    const { images } = conversation.messages[index];  // an edited message keeps its images
    conversation.messages.splice(index);
    conversation.messages.push(images ? { role: "user", content: text, images } : { role: "user", content: text });
    if (index === 0) conversation.title = text.slice(0, 60);
    renderConversationList();
    generate(conversation);
  };
  box.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      submit();
    } else if (event.key === "Escape") {
      renderMessages({ keepScroll: true });
    }
  });
  const row = document.createElement("div");
  row.className = "edit-buttons";
  row.append(button("Send", "save-edit", submit), button("Cancel", "cancel-edit", () => renderMessages({ keepScroll: true })));
  element.querySelector(".content").replaceChildren(box, row);
  element.querySelector(".actions").hidden = true;
  box.focus();
}

function emptyState() {
  const element = document.createElement("div");
  element.id = "empty-state";
  const title = document.createElement("h2");
  const model = document.createElement("span");
  model.className = "empty-model";
  model.textContent = state.model || "the model";
  title.append("Chat with ", model);
  const hint = document.createElement("p");
  hint.className = "muted";
  hint.textContent = "Type a message below: Enter sends, Shift+Enter starts a new line. " +
    "Conversations are kept in this browser only.";
  const examples = document.createElement("div");
  examples.className = "examples";
  for (const text of ["Explain what a KV cache is, in two sentences.", "Write a haiku about a lighthouse.",
    "Give me a Python function that reverses a string."]) {
    examples.append(button(text, "example", () => {
      $("prompt").value = text;
      $("prompt").focus();
    }));
  }
  element.append(title, hint, examples);
  return element;
}

function failureElement(conversation) {
  const element = document.createElement("div");
  element.className = "send-error";
  element.setAttribute("role", "alert");
  const text = document.createElement("span");
  text.textContent = `Not sent: ${state.failure.message}`;
  element.append(text, button("Retry", "retry", () => retry(conversation)));
  return element;
}

function scrollToEnd() {
  const box = $("messages");
  box.scrollTop = box.scrollHeight;
}

function renderMessages({ keepScroll = false } = {}) {
  const box = $("messages");
  const scrollTop = box.scrollTop;
  const atEnd = box.scrollHeight - box.scrollTop - box.clientHeight < 80;
  box.replaceChildren();
  const conversation = currentConversation();
  if (conversation) conversation.messages.forEach((_, i) => box.append(messageElement(conversation, i)));
  if (conversation && state.failure && state.failure.id === conversation.id) box.append(failureElement(conversation));
  if (!box.childElementCount) box.append(emptyState());
  if (keepScroll && !atEnd) box.scrollTop = scrollTop;  // the reader had scrolled up: stay there
  else scrollToEnd();
}

function renderConversationList() {
  const list = $("conversations");
  list.replaceChildren();
  for (const conversation of state.conversations) {
    const item = document.createElement("li");
    if (conversation.id === state.currentId) item.className = "current";
    const title = button(conversation.title || "New chat", "title", () => {
      state.currentId = conversation.id;
      setSidebarOpen(false);
      renderConversationList();
      renderMessages();
    });
    title.title = title.textContent;
    const remove = button("×", "delete", () => deleteConversation(conversation.id));
    remove.setAttribute("aria-label", "Delete conversation");
    item.append(title, remove);
    list.append(item);
  }
}

function deleteConversation(id) {
  if (state.controller && id === state.streamingId) state.controller.abort();
  state.conversations = state.conversations.filter((c) => c.id !== id);
  if (state.currentId === id) state.currentId = state.conversations.length ? state.conversations[0].id : null;
  saveConversations();
  renderConversationList();
  renderMessages();
}

function setBusy(busy) {
  $("send").hidden = busy;
  $("stop").hidden = !busy;
  document.body.classList.toggle("busy", busy);
}

// Below 700 px the sidebar is a panel over the conversation, opened by the ☰ button.
function setSidebarOpen(open) {
  document.body.classList.toggle("sidebar-open", open);
  $("sidebar-toggle").setAttribute("aria-expanded", String(open));
}

// ---------------------------------------------------------------------------------------------
// Talking to the server.

// The data of each server-sent event of a response body, as text.
async function* serverSentEvents(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end;
    while ((end = buffer.search(/\r?\n\r?\n/)) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, "");
      const data = block
        .split(/\r?\n/)
        .filter((line) => line.startsWith("data:"))
        .map((line) => line.slice(5).replace(/^ /, ""))
        .join("\n");
      if (data) yield data;
    }
  }
}

async function errorMessage(response) {
  let message = `${response.status} ${response.statusText}`;
  try {
    const body = await response.json();
    if (body && body.error && body.error.message) message = body.error.message;
  } catch {
    // not JSON: the status says enough
  }
  if (response.status === 401) message += " (set the server's API key in Settings)";
  return message;
}

function send(text) {
  let conversation = currentConversation();
  if (!conversation) {
    conversation = { id: `${Date.now()}-${Math.random().toString(36).slice(2)}`, title: "", updated: 0, messages: [] };
    state.conversations.unshift(conversation);
    state.currentId = conversation.id;
  }
  if (!conversation.title) conversation.title = text.slice(0, 60);
  const images = chatImages.take();
  conversation.messages.push(images.length ? { role: "user", content: text, images } : { role: "user", content: text });
  renderConversationList();
  return generate(conversation);
}

// The last answer again: it is dropped and the conversation is sent as it was before it.
function regenerate(conversation) {
  if (state.controller) return;
  const last = conversation.messages[conversation.messages.length - 1];
  if (last && last.role === "assistant") conversation.messages.pop();
  generate(conversation);
}

// After a failed send: a partial answer (the connection broke mid-way) is replaced too.
function retry(conversation) {
  regenerate(conversation);
}

// Streams an answer to the conversation as it stands (it ends with the user's message). A send
// that fails shows its error under the conversation with Retry; an answer without text is
// dropped, so the history never keeps an empty turn.
async function generate(conversation) {
  state.failure = null;
  conversation.updated = Date.now();
  const body = requestBody(conversation);
  const answer = { role: "assistant", content: "", stats: null };
  conversation.messages.push(answer);
  saveConversations();
  renderMessages();
  const element = $("messages").lastElementChild;
  element.classList.add("streaming");

  const controller = new AbortController();
  state.controller = controller;
  state.streamingId = conversation.id;
  setBusy(true);
  showError("");
  const started = performance.now();
  let firstAt = null;
  let lastAt = null;
  let chunks = 0;
  let usageTokens = null;
  let finish = null;
  let failure = null;
  let pending = false;  // a repaint is scheduled
  try {
    const response = await fetch("/v1/chat/completions", {
      method: "POST",
      headers: headers(),
      body: JSON.stringify(body),
      signal: controller.signal,
    });
    if (!response.ok) throw new Error(await errorMessage(response));
    for await (const data of serverSentEvents(response.body)) {
      if (data === "[DONE]") break;
      const chunk = JSON.parse(data);
      if (chunk.error) throw new Error(chunk.error.message || "the server reported an error");
      if (chunk.usage) usageTokens = chunk.usage.completion_tokens;
      const choice = chunk.choices && chunk.choices[0];
      if (!choice) continue;
      const delta = choice.delta && choice.delta.content;
      const thought = choice.delta && choice.delta.reasoning_content;
      if (delta || thought) {
        const now = performance.now();
        if (firstAt === null) firstAt = now;
        lastAt = now;
        chunks += 1;
        if (thought) answer.reasoning = (answer.reasoning || "") + thought;
        if (delta) answer.content += delta;
        if (!pending) {
          pending = true;
          requestAnimationFrame(() => {
            pending = false;
            const nearEnd = $("messages").scrollHeight - $("messages").scrollTop - $("messages").clientHeight < 80;
            renderMessageContent(element, answer);
            if (nearEnd) scrollToEnd();
          });
        }
      }
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  } catch (e) {
    if (e.name === "AbortError") {
      finish = "stopped";
    } else {
      finish = "error";
      failure = e.message || String(e);
    }
  } finally {
    if (state.controller === controller) {
      state.controller = null;
      state.streamingId = null;
    }
    // Tokens: the server's count when it sent one (a stopped answer gets none), else the chunks
    // with text (one per token, but for a token whose bytes finish in the next one).
    const tokens = usageTokens ?? chunks;
    const decodeSeconds = firstAt !== null && lastAt > firstAt ? (lastAt - firstAt) / 1000 : null;
    answer.stats = {
      ttft_ms: firstAt === null ? null : firstAt - started,
      tokens_per_s: decodeSeconds && tokens > 1 ? (tokens - 1) / decodeSeconds : null,
      tokens,
      finish,
    };
    if (!keptMessage(answer)) conversation.messages.splice(conversation.messages.indexOf(answer), 1);
    if (failure) state.failure = { id: conversation.id, message: failure };
    conversation.updated = Date.now();
    saveConversations();
    setBusy(false);
    if (conversation.id === state.currentId) renderMessages({ keepScroll: !failure });
  }
}

async function showModel() {
  try {
    const response = await fetch("/v1/models", { headers: headers() });
    if (!response.ok) {
      if (response.status === 401) showError(await errorMessage(response));
      return;
    }
    const models = await response.json();
    state.model = models.data && models.data[0] ? models.data[0].id : "";
    $("model-name").textContent = state.model;
    chatImages.setAvailable(Boolean(models.data && models.data[0] && models.data[0].modalities?.vision));
    for (const element of document.querySelectorAll(".empty-model")) element.textContent = state.model || "the model";
  } catch {
    // the server is away: sending will say so
  }
}

// ---------------------------------------------------------------------------------------------

function start() {
  chatImages.start(showError);
  loadSettings();
  loadConversations();
  renderConversationList();
  renderMessages();
  showModel();
  for (const id of SETTING_FIELDS) $(id).addEventListener("change", saveSettings);
  $("api-key").addEventListener("change", () => {
    saveSettings();
    showError("");
    showModel();
  });
  $("new-chat").addEventListener("click", () => {
    state.currentId = null;
    setSidebarOpen(false);
    renderConversationList();
    renderMessages();
    $("prompt").focus();
  });
  $("sidebar-toggle").addEventListener("click", () => setSidebarOpen(!document.body.classList.contains("sidebar-open")));
  $("backdrop").addEventListener("click", () => setSidebarOpen(false));
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape") setSidebarOpen(false);
  });
  $("stop").addEventListener("click", () => {
    if (state.controller) state.controller.abort();
  });
  $("composer").addEventListener("submit", (event) => {
    event.preventDefault();
    const text = $("prompt").value.trim();
    if (!text || state.controller) return;
    $("prompt").value = "";
    send(text);
  });
  $("prompt").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      $("composer").requestSubmit();
    }
  });
}

start();
