// The chat page's Markdown renderer (index.html loads it before app.js, which calls
// renderMarkdown): a small subset, safe by construction. All text is HTML-escaped before any
// markup is added, so no model text ever reaches innerHTML unescaped.
"use strict";

// ---------------------------------------------------------------------------------------------
// Markdown: a small subset (code fences, inline code, bold, italic, headings, lists, http(s)
// links, GFM tables and blockquotes), enough for chat answers. Unclosed fences render as code,
// so a streaming answer looks right before it is finished.

const HTML_ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

function escapeHtml(text) {
  return text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]);
}

// Bold and italic on text that is already escaped (escaping leaves * and _ alone).
function emphasis(escaped) {
  return escaped
    .replace(/\*\*(?=\S)([^*\n]*?\S)\*\*/g, "<strong>$1</strong>")
    .replace(/(^|[^*\w])\*(?=\S)([^*\n]*?\S)\*(?![*\w])/g, "$1<em>$2</em>")
    .replace(/(^|[^\w])_(?=\S)([^_\n]*?\S)_(?!\w)/g, "$1<em>$2</em>");
}

// One line of text (raw, as the model wrote it) as HTML. Code spans and links are set aside as
// finished HTML first (NUL-delimited placeholders; NULs were removed from the input), so
// emphasis never rewrites the inside of a code span or an href.
function renderInline(text) {
  const kept = [];
  const keep = (html) => `\u0000${kept.push(html) - 1}\u0000`;
  const marked = text
    .replace(/`([^`\n]+)`/g, (_, code) => keep(`<code>${escapeHtml(code)}</code>`))
    .replace(/\[([^\]\n]+)\]\((https?:\/\/[^\s()<>"'`]+)\)/g, (_, label, url) =>
      keep(`<a href="${escapeHtml(url)}" target="_blank" rel="noopener noreferrer">${emphasis(escapeHtml(label))}</a>`));
  // A link's label may hold a code span's placeholder: restore inside what is restored too.
  const restore = (html) => html.replace(/\u0000(\d+)\u0000/g, (_, i) => restore(kept[Number(i)]));
  return restore(emphasis(escapeHtml(marked)));
}

// A GFM table row's cells: split at pipes that no backslash escapes (inside code spans too, as
// in GFM), without the optional outer pipes; "\|" is a literal pipe.
function tableCells(line) {
  let row = line.trim();
  if (row.startsWith("|")) row = row.slice(1);
  if (row.endsWith("|") && !row.endsWith("\\|")) row = row.slice(0, -1);
  return row.split(/(?<!\\)\|/).map((cell) => cell.trim().replace(/\\\|/g, "|"));
}

// The alignment of each column when the line is a table's delimiter row ("| :-- | --: |"), else null.
function tableAlignments(line) {
  if (!line.includes("|")) return null;
  const cells = tableCells(line);
  if (!cells.every((cell) => /^:?-+:?$/.test(cell))) return null;
  return cells.map((cell) => (cell.endsWith(":") ? (cell.startsWith(":") ? "center" : "right") : cell.startsWith(":") ? "left" : ""));
}

function renderTable(header, alignments, rows) {
  // Alignment is a class from this fixed set: the page's policy forbids style attributes.
  const cell = (tag, text, i) => {
    const align = alignments[i] ? ` class="align-${alignments[i]}"` : "";
    return `<${tag}${align}>${renderInline(text ?? "")}</${tag}>`;
  };
  // GFM: a row with fewer cells than the header gets empty ones, extra cells are dropped.
  const row = (tag, cells) => `<tr>${alignments.map((_, i) => cell(tag, cells[i], i)).join("")}</tr>`;
  const body = rows.length ? `<tbody>${rows.map((cells) => row("td", cells)).join("")}</tbody>` : "";
  return `<div class="table-wrap"><table><thead>${row("th", header)}</thead>${body}</table></div>`;
}

const QUOTE_LINE = /^ {0,3}>/;
const MAX_QUOTE_DEPTH = 8;  // deeper ">" markers stay text (no unbounded recursion)

function renderMarkdown(text) {
  return renderBlocks(text.replace(/\u0000/g, "").replace(/\r\n?/g, "\n").split("\n"), 0);
}

function renderBlocks(lines, depth) {
  const out = [];
  let paragraph = [];
  let list = null;  // { tag: "ul" | "ol", start: the first number, items: [raw text] }
  const endParagraph = () => {
    if (paragraph.length) out.push(`<p>${paragraph.map(renderInline).join("<br>")}</p>`);
    paragraph = [];
  };
  const endList = () => {
    const start = list && list.start !== 1 ? ` start="${list.start}"` : "";
    if (list) out.push(`<${list.tag}${start}>${list.items.map((item) => `<li>${renderInline(item)}</li>`).join("")}</${list.tag}>`);
    list = null;
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const fence = line.match(/^\s*(```+|~~~+)\s*([\w+#.-]*)/);
    if (fence) {
      endParagraph();
      endList();
      const code = [];
      for (i++; i < lines.length && !lines[i].trimStart().startsWith(fence[1]); i++) code.push(lines[i]);
      const language = fence[2] ? ` data-language="${escapeHtml(fence[2])}"` : "";
      out.push(`<pre><code${language}>${escapeHtml(code.join("\n"))}</code></pre>`);
      continue;
    }
    if (QUOTE_LINE.test(line) && depth < MAX_QUOTE_DEPTH) {
      endParagraph();
      endList();
      const quoted = [];
      for (; i < lines.length && QUOTE_LINE.test(lines[i]); i++) quoted.push(lines[i].replace(/^ {0,3}> ?/, ""));
      i--;
      out.push(`<blockquote>${renderBlocks(quoted, depth + 1)}</blockquote>`);
      continue;
    }
    const alignments = line.includes("|") && i + 1 < lines.length ? tableAlignments(lines[i + 1]) : null;
    const header = alignments && tableCells(line);
    if (header && header.length === alignments.length) {
      endParagraph();
      endList();
      const rows = [];
      for (i += 2; i < lines.length && lines[i].includes("|") && !QUOTE_LINE.test(lines[i]); i++) rows.push(tableCells(lines[i]));
      i--;
      out.push(renderTable(header, alignments, rows));
      continue;
    }
    const heading = line.match(/^(#{1,6})\s+(.*)$/);
    if (heading) {
      endParagraph();
      endList();
      const level = heading[1].length;
      out.push(`<h${level}>${renderInline(heading[2])}</h${level}>`);
      continue;
    }
    const bullet = line.match(/^\s*[-*+]\s+(.*)$/);
    const numbered = line.match(/^\s*(\d{1,9})[.)]\s+(.*)$/);
    if (bullet || numbered) {
      endParagraph();
      const tag = bullet ? "ul" : "ol";
      if (!list || list.tag !== tag) {
        endList();
        list = { tag, start: numbered ? Number(numbered[1]) : 1, items: [] };
      }
      list.items.push(bullet ? bullet[1] : numbered[2]);
      continue;
    }
    if (line.trim() === "") {
      endParagraph();
      endList();
      continue;
    }
    if (list && /^\s+\S/.test(line)) {
      list.items[list.items.length - 1] += " " + line.trim();  // an indented continuation
      continue;
    }
    endList();
    paragraph.push(line);
  }
  endParagraph();
  endList();
  return out.join("");
}
