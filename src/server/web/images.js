// Images in the chat page: where the server has a vision encoder (/v1/models says
// modalities.vision, `lumen serve --mmproj`), the composer's Image button picks a file, which is
// read in the browser as a data: URL and sent as an OpenAI image part of the next user message.
// Loaded before app.js, which calls these at the few places a message is built, shown or stored.
"use strict";

const chatImages = (() => {
  // The server's defaults (--max-image-bytes, --max-images-per-request): a file the server would
  // refuse is told here, before it is read. The server checks again.
  const MAX_BYTES = 20 * 1024 * 1024;
  const MAX_PER_MESSAGE = 8;
  const TYPES = ["image/png", "image/jpeg", "image/webp", "image/gif"];
  let pending = [];  // data: URLs for the next message
  let onError = () => {};

  const byId = (id) => document.getElementById(id);
  const isImageUrl = (u) => typeof u === "string" && TYPES.some((t) => u.startsWith(`data:${t};base64,`));

  function thumbnail(url, className) {
    const img = document.createElement("img");
    img.className = className;
    img.src = url;
    img.alt = "attached image";
    return img;
  }

  function renderPending() {
    const box = byId("attachments");
    box.replaceChildren();
    pending.forEach((url, i) => {
      const item = document.createElement("span");
      item.className = "attachment";
      const remove = document.createElement("button");
      remove.type = "button";
      remove.className = "remove-image";
      remove.textContent = "×";
      remove.setAttribute("aria-label", "Remove the image");
      remove.addEventListener("click", () => {
        pending.splice(i, 1);
        renderPending();
      });
      item.append(thumbnail(url, "attachment-image"), remove);
      box.append(item);
    });
    box.hidden = pending.length === 0;
  }

  function readFile(file) {
    if (!TYPES.includes(file.type)) return Promise.reject(new Error(`${file.name} is not a PNG, JPEG, WebP or GIF image`));
    if (file.size > MAX_BYTES) return Promise.reject(new Error(`${file.name} is larger than 20 MiB`));
    return new Promise((resolve, reject) => {
      const reader = new FileReader();
      reader.onload = () => resolve(reader.result);
      reader.onerror = () => reject(new Error(`could not read ${file.name}`));
      reader.readAsDataURL(file);
    });
  }

  async function attach(files) {
    for (const file of files) {
      if (pending.length >= MAX_PER_MESSAGE) {
        onError(`At most ${MAX_PER_MESSAGE} images a message`);
        break;
      }
      try {
        pending.push(await readFile(file));
      } catch (e) {
        onError(e.message);
      }
    }
    renderPending();
  }

  return {
    // Wires the Image button and file input; `showError` tells the user about a refused file.
    start(showError) {
      onError = showError;
      byId("attach").addEventListener("click", () => byId("image-input").click());
      byId("image-input").addEventListener("change", async (event) => {
        const files = [...event.target.files];
        event.target.value = "";  // the same file may be picked again
        await attach(files);
      });
    },
    // The Image button only where the server can take images.
    setAvailable(available) {
      byId("attach").hidden = !available;
      if (!available && pending.length) {
        pending = [];
        renderPending();
      }
    },
    // The pending images, now part of the message being sent (empty when none).
    take() {
      const taken = pending;
      pending = [];
      renderPending();
      return taken;
    },
    // A stored message's images, checked: only image data: URLs are kept.
    validImages(message) {
      return Array.isArray(message.images) ? message.images.filter(isImageUrl) : [];
    },
    // A message as the API takes it: its text alone, or image parts then the text.
    content(message) {
      const images = this.validImages(message);
      if (!images.length) return message.content;
      return [...images.map((url) => ({ type: "image_url", image_url: { url } })), { type: "text", text: message.content }];
    },
    // The message's images, shown above its text (null when it has none).
    element(message) {
      const images = this.validImages(message);
      if (!images.length) return null;
      const row = document.createElement("div");
      row.className = "message-images";
      for (const url of images) row.append(thumbnail(url, "message-image"));
      return row;
    },
    // The conversations without their images, for a browser whose storage cannot hold them:
    // each message keeps only how many it had.
    withoutImages(conversations) {
      return conversations.map((c) => ({
        ...c,
        messages: c.messages.map(({ images, ...m }) => (images && images.length ? { ...m, images_dropped: images.length } : m)),
      }));
    },
  };
})();
