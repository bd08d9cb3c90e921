"""The chat page in a real browser: headless Chromium, driven through Selenium, against a real
`lumen serve` on the default model. It loads the page under its Content-Security-Policy (and
checks the policy is enforced), sends a message and watches the answer stream in, presses Stop and
checks the server aborted the request, reads the TTFT and tok/s shown, reloads and finds the
conversation kept, and takes a screenshot (into docs/images/web-ui.png with
LUMEN_UPDATE_SCREENSHOT=1, else a temporary file). Against a server with --api-key, the page loads
without the key and works once the user types it. At 400 and 360 px the sidebar folds behind a
toggle and the composer keeps the width; an empty chat shows the model and example prompts; GFM
tables and blockquotes render, hostile content in them stays text (and 3000 fuzzed strings produce
only the renderer's own elements and attributes); Copy (per message and per code block),
Regenerate and Edit work; a failed send (refused by the server, or the server gone) shows its
error inline with Retry and keeps no empty turn; a reasoning model's thinking (reasoning_content)
streams into a fold above its answer, as text, and is kept apart from it. Skipped, saying why, where no Chromium and
chromedriver are installed (scripts/setup.sh installs Debian's)."""
import json
import os
import re
import tempfile
import time
from pathlib import Path

from selenium.webdriver import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from conftest import httpx, LumenServer
# The fixture `browser` too: pytest finds it by its imported name.
from web_browser import browser, open_page, read_clipboard, rect, stored_conversations, wait_for  # noqa: F401

SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "images" / "web-ui.png"
ABORTED = 'lumen_request_success_total{finished_reason="abort"}'


def test_chat_page_in_chromium(browser):
    server = LumenServer()
    try:
        def by_id(id):
            return browser.find_element(By.ID, id)

        def answer_text():
            return browser.find_elements(By.CSS_SELECTOR, ".message.assistant .content")[-1].text

        r = httpx.get(server.base_url + "/", timeout=10)
        assert "default-src 'none'" in r.headers["Content-Security-Policy"]
        browser.get(server.base_url + "/")
        wait_for(lambda: by_id("model-name").text, 10, "the model's name from /v1/models")
        assert browser.title == "Lumen chat"

        # Settings: a fixed seed, and room for a long answer that Stop cuts short.
        for field, value in (("system-prompt", "You are a storyteller."), ("temperature", "0.8"), ("seed", "7"),
                             ("max-tokens", "1500")):
            by_id(field).clear()
            by_id(field).send_keys(value)
        by_id("prompt").send_keys("Write a very long story about a lighthouse keeper and a storm.")
        by_id("send").click()

        # The answer grows while it streams: several different, increasing lengths.
        lengths = []
        deadline = time.time() + 20
        while len(lengths) < 8 and time.time() < deadline:
            n = len(answer_text())
            if n and (not lengths or n > lengths[-1]):
                lengths.append(n)
            time.sleep(0.15)
        assert len(lengths) >= 8, f"the answer did not stream in: {lengths}"
        assert by_id("stop").is_displayed() and not by_id("send").is_displayed()

        by_id("stop").click()
        wait_for(lambda: by_id("send").is_displayed(), 5, "the page to leave streaming")
        stopped_text = answer_text()
        time.sleep(0.5)
        assert answer_text() == stopped_text, "the answer went on growing after Stop"
        # The server saw the client go and aborted the request (the disconnect watcher).
        wait_for(lambda: server.metrics().get(ABORTED) == 1, 5, "the server to count the request as aborted")
        generated = server.metrics()["lumen_generation_tokens_total"]
        assert 0 < generated < 1500

        stats = browser.find_elements(By.CSS_SELECTOR, ".message.assistant .stats")[-1].text
        assert re.search(r"TTFT \d+ ms", stats) and re.search(r"\d+\.\d tok/s", stats), stats
        assert "stopped" in stats, stats

        # A second, short answer ends by itself; its Markdown is rendered as elements.
        by_id("max-tokens").clear()
        by_id("max-tokens").send_keys("48")
        by_id("prompt").send_keys("Give me a Python function that adds two numbers, in a code block.")
        by_id("send").click()
        wait_for(lambda: len(browser.find_elements(By.CSS_SELECTOR, ".message.assistant .stats")) == 2
                 and by_id("send").is_displayed(), 20, "the second answer")
        second_stats = browser.find_elements(By.CSS_SELECTOR, ".message.assistant .stats")[-1].text
        assert "TTFT" in second_stats and "stopped" not in second_stats, second_stats

        # The renderer in the browser: model text is text, markup is only what the page adds.
        html = browser.execute_script(
            "return renderMarkdown(arguments[0]);",
            '<img src=x onerror="alert(1)"> **bold** [x](javascript:alert(1)) [ok](https://example.com)\n'
            "```python\nprint('<b>')\n```")
        assert "<img" not in html and "&lt;img" in html and "<strong>bold</strong>" in html
        assert 'href="javascript' not in html and '<a href="https://example.com"' in html
        assert "<pre><code data-language=\"python\">print(&#39;&lt;b&gt;&#39;)</code></pre>" in html

        # Kept in localStorage: after a reload the conversation and both answers are there.
        texts_before = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".message .content")]
        browser.refresh()
        wait_for(lambda: len(browser.find_elements(By.CSS_SELECTOR, ".message")) == 4, 10, "the stored conversation")
        assert [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".message .content")] == texts_before
        assert texts_before[1] == stopped_text
        assert len(browser.find_elements(By.CSS_SELECTOR, "#conversations li")) == 1
        assert "stopped" in browser.find_elements(By.CSS_SELECTOR, ".message.assistant .stats")[0].text

        target = SCREENSHOT if os.environ.get("LUMEN_UPDATE_SCREENSHOT") == "1" else \
            Path(tempfile.gettempdir()) / "lumen-web-ui.png"
        target.parent.mkdir(parents=True, exist_ok=True)
        assert browser.save_screenshot(str(target)) and target.stat().st_size > 10_000

        # No console errors (a CSP violation would be one), and the policy is enforced: an
        # inline script added now does not run.
        errors = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
        assert not errors, errors
        ran = browser.execute_script(
            "const s = document.createElement('script'); s.textContent = 'window.inlineRan = true;';"
            "document.body.append(s); return window.inlineRan === true;")
        assert ran is False, "an inline script ran: the Content-Security-Policy is not enforced"
        violations = [e["message"] for e in browser.get_log("browser") if "Content Security Policy" in e["message"]]
        assert violations, "the blocked inline script should have been reported as a CSP violation"

        # Deleting the conversation empties the list, and it stays deleted.
        browser.find_element(By.CSS_SELECTOR, "#conversations li .delete").click()
        assert not browser.find_elements(By.CSS_SELECTOR, "#conversations li")
        browser.refresh()
        wait_for(lambda: by_id("model-name").text, 10, "the page")
        assert not browser.find_elements(By.CSS_SELECTOR, "#conversations li, .message")

        # Stored data the page did not write (or that is broken) does not stop it from opening,
        # and stored text is shown as text.
        browser.execute_script("localStorage.setItem('lumen.conversations', arguments[0]);", json.dumps([
            {"id": "a", "title": "<i>kept</i>", "messages": [
                {"role": "assistant", "content": "<img src=x>", "stats": {"tokens_per_s": "x", "tokens": 3}}]},
            {"id": "b", "messages": [{"role": "user", "content": 5}]}, "junk"]))
        browser.refresh()
        wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, ".message"), 10, "the stored conversation")
        assert [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#conversations .title")] == ["<i>kept</i>"]
        assert browser.find_element(By.CSS_SELECTOR, ".message .content").text == "<img src=x>"
        assert browser.find_element(By.CSS_SELECTOR, ".message .stats").text == "3 tokens"
        browser.execute_script("localStorage.setItem('lumen.conversations', '{not json');")
        browser.refresh()
        wait_for(lambda: by_id("model-name").text, 10, "the page over broken storage")
        assert not browser.find_elements(By.CSS_SELECTOR, "#conversations li, .message")
    finally:
        assert server.stop() == 0, "".join(server.log)


def test_api_key_typed_into_the_page(browser):
    server = LumenServer(api_key="browser-test-key")
    try:
        browser.get(server.base_url + "/")  # the page itself needs no key
        error = wait_for(lambda: browser.find_element(By.ID, "error").text, 10, "the page to report the missing key")
        assert "API key" in error, error
        assert browser.find_element(By.ID, "model-name").text == ""
        key = browser.find_element(By.ID, "api-key")
        key.send_keys("browser-test-key", Keys.TAB)  # the change event stores it and retries
        wait_for(lambda: browser.find_element(By.ID, "model-name").text, 10, "the model's name with the key")
        assert not browser.find_element(By.ID, "error").is_displayed()
        browser.find_element(By.ID, "max-tokens").clear()
        browser.find_element(By.ID, "max-tokens").send_keys("8")
        browser.find_element(By.ID, "prompt").send_keys("Say hello.", Keys.ENTER)
        wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, ".message.assistant .stats")
                 and browser.find_element(By.ID, "send").is_displayed(), 20, "the answer")
        assert browser.find_element(By.CSS_SELECTOR, ".message.assistant .content").text
        assert not browser.find_element(By.ID, "error").is_displayed()
        browser.refresh()  # the key is kept in this browser
        wait_for(lambda: browser.find_element(By.ID, "model-name").text, 10, "the model's name after a reload")
        assert browser.find_element(By.ID, "api-key").get_attribute("value") == "browser-test-key"
    finally:
        assert server.stop() == 0, "".join(server.log)


# ---------------------------------------------------------------------------------------------
# A narrow window, tables and blockquotes, the message actions, the empty state and a failed
# send (issue 49, item 6). Each test has its own server, so its own origin and empty storage.

def test_narrow_window_and_empty_state(browser):
    server = LumenServer()
    try:
        browser.set_window_size(400, 800)
        open_page(browser, server)
        by_id = lambda id: browser.find_element(By.ID, id)  # noqa: E731
        assert browser.execute_script("return window.innerWidth") <= 400

        # At 400 px the sidebar is folded away (nothing of it over the conversation) and the
        # composer has the width; nothing scrolls sideways.
        for width in (400, 360):
            browser.set_window_size(width, 800)
            inner = browser.execute_script("return window.innerWidth")
            assert rect(browser, "#prompt")["width"] >= inner - 120, rect(browser, "#prompt")
            assert rect(browser, "#sidebar")["right"] <= rect(browser, "main")["left"] + 0.5
            assert not by_id("sidebar").is_displayed()
            assert 0 <= rect(browser, "#composer")["left"] and rect(browser, "#composer")["right"] <= inner + 0.5
            assert by_id("send").is_displayed() and rect(browser, "#send")["right"] <= inner
            assert browser.execute_script("return document.documentElement.scrollWidth") <= inner

        # An empty chat says what to do, names the model, and offers example prompts.
        empty = by_id("empty-state")
        assert empty.is_displayed()
        wait_for(lambda: "SmolLM2" in empty.text, 5, "the model's name in the empty state")
        examples = browser.find_elements(By.CSS_SELECTOR, "#empty-state .example")
        assert len(examples) >= 2 and "Enter sends" in empty.text
        examples[0].click()
        assert by_id("prompt").get_attribute("value") == examples[0].text

        # The toggle opens it over the conversation; the backdrop, Escape and New chat close it.
        toggle = by_id("sidebar-toggle")
        assert toggle.is_displayed() and toggle.get_attribute("aria-expanded") == "false"
        toggle.click()
        assert by_id("sidebar").is_displayed() and toggle.get_attribute("aria-expanded") == "true"
        assert rect(browser, "#sidebar")["left"] >= 0 and rect(browser, "#sidebar")["right"] <= 360
        # The backdrop's visible part: right of the sidebar (offsets are from its centre).
        ActionChains(browser).move_to_element_with_offset(by_id("backdrop"), 160, 0).click().perform()
        assert not by_id("sidebar").is_displayed()
        toggle.click()
        by_id("temperature").send_keys(Keys.ESCAPE)
        assert not by_id("sidebar").is_displayed()
        toggle.click()
        by_id("new-chat").click()
        assert not by_id("sidebar").is_displayed()

        # A wide window keeps the sidebar beside the conversation and no toggle.
        browser.set_window_size(1200, 800)
        assert by_id("sidebar").is_displayed() and not toggle.is_displayed()
        assert rect(browser, "#sidebar")["width"] == 280
        assert rect(browser, "#sidebar")["right"] <= rect(browser, "main")["left"] + 0.5
    finally:
        browser.set_window_size(1200, 800)
        assert server.stop() == 0, "".join(server.log)


# Every element and attribute the renderer may produce; anything else in its output is a hole.
RENDERED_HTML_CHECK = """
const allowedTags = new Set(["P", "BR", "STRONG", "EM", "CODE", "PRE", "A", "H1", "H2", "H3", "H4", "H5", "H6",
  "UL", "OL", "LI", "BLOCKQUOTE", "DIV", "TABLE", "THEAD", "TBODY", "TR", "TH", "TD"]);
const allowedClasses = new Set(["table-wrap", "align-left", "align-center", "align-right"]);
function problems(html) {
  const template = document.createElement("template");
  template.innerHTML = html;
  const found = [];
  for (const element of template.content.querySelectorAll("*")) {
    if (!allowedTags.has(element.tagName)) found.push("tag " + element.tagName);
    for (const { name, value } of element.attributes) {
      const ok = name === "href" ? /^https?:\\/\\//.test(value)
        : name === "class" ? allowedClasses.has(value)
        : name === "target" ? value === "_blank"
        : name === "rel" ? value === "noopener noreferrer"
        : name === "start" ? /^\\d+$/.test(value)
        : name === "data-language";
      if (!ok) found.push(`attribute ${name}="${value}" on ${element.tagName}`);
    }
  }
  return found;
}
"""

HOSTILE_TABLE = (
    "| <img src=x onerror=alert(1)> | <script>alert(1)</script> | `a\\|b` |\n"
    '| :--- | :---: | ---: |\n'
    '| [x](javascript:alert(1)) | "><svg onload=alert(1)> | [ok](https://example.com/"onmouseover=alert(1)) |\n'
    "| only one\n"
    "| 1 | 2 | 3 | 4 dropped |\n"
    "\n"
    "> <iframe src=javascript:alert(1)></iframe> **bold**\n"
    "> > nested <b>quote</b>\n"
    "> - a list item\n"
    ">\n"
    "> ```\n"
    "> </code></pre><script>alert(1)</script>\n"
    "> ```\n")


def test_markdown_tables_and_blockquotes(browser):
    server = LumenServer()
    try:
        open_page(browser, server)
        render = lambda text: browser.execute_script("return renderMarkdown(arguments[0]);", text)  # noqa: E731
        html = render("Intro\n| Name | Value |\n|------|------:|\n| a | **1** |\n| b |\n\nAfter\n> quoted *text*\n> more")
        assert html.startswith("<p>Intro</p><div class=\"table-wrap\"><table><thead><tr><th>Name</th>"
                               "<th class=\"align-right\">Value</th></tr></thead><tbody>"), html
        assert "<tr><td>a</td><td class=\"align-right\"><strong>1</strong></td></tr>" in html
        assert "<tr><td>b</td><td class=\"align-right\"></td></tr></tbody></table></div>" in html
        assert html.endswith("<p>After</p><blockquote><p>quoted <em>text</em><br>more</p></blockquote>"), html
        # Not a table: no delimiter row, or one whose cell count differs from the header's.
        assert "<table" not in render("a | b\nc | d") and "<table" not in render("| a | b |\n| --- |")

        # Hostile content: every character of it is text, only the renderer's own markup is HTML.
        html = render(HOSTILE_TABLE)
        assert browser.execute_script(RENDERED_HTML_CHECK + "return problems(arguments[0]);", html) == []
        for escaped in ("&lt;img src=x onerror=alert(1)&gt;", "&lt;script&gt;alert(1)&lt;/script&gt;",
                        "<code>a|b</code>", "&lt;iframe", "&lt;/code&gt;&lt;/pre&gt;&lt;script&gt;"):
            assert escaped in html, (escaped, html)
        assert 'href="javascript' not in html and "<th class=\"align-center\">" in html
        assert "<blockquote><p>&lt;iframe" in html and "<blockquote><p>nested &lt;b&gt;quote&lt;/b&gt;</p></blockquote>" in html
        assert "<ul><li>a list item</li></ul>" in html and html.count("<tr>") == 4

        # Deep nesting stops at 8 quotes (the rest is text), and huge inputs stay quick.
        deep = render(">" * 100000 + " x")
        assert deep.count("<blockquote>") == 8 and deep.endswith("x</p>" + "</blockquote>" * 8)
        took = browser.execute_script(
            "const t = performance.now(); renderMarkdown(arguments[0]); return performance.now() - t;",
            ("| a " * 2000 + "|\n" + "|---" * 2000 + "|\n") + ("| x " * 2000 + "|\n") * 50 + "> |\n" * 5000)
        assert took < 2000, took

        # A small fuzz: 3000 random strings of Markdown and HTML pieces, every output checked.
        found = browser.execute_script(RENDERED_HTML_CHECK + """
            const pieces = ["|", "\\\\|", ":--", "--:", "---", "-", ">", "> ", "\\n", "\\n\\n", " ", "x", "`", "```",
              "**", "*", "_", "# ", "- ", "1. ", "<img src=x onerror=alert(1)>", "<script>", "</td>", "<td", "\\"",
              "'", "&", "&lt;", "=", "javascript:", "[a](https://e.x/\\"onerror=)", "[b](javascript:alert(1))",
              "](", "\\u0000", "\\u00000\\u0000", "<", "onmouseover=", "style=", "class=", "\\\\"];
            let seed = 49;
            const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
            const found = [];
            for (let n = 0; n < 3000 && found.length < 5; n++) {
              let text = "";
              for (let k = 1 + Math.floor(random() * 40); k > 0; k--) text += pieces[Math.floor(random() * pieces.length)];
              const problem = problems(renderMarkdown(text));
              if (problem.length) found.push([text, problem]);
            }
            return found;""")
        assert found == [], found

        # In a stored conversation they render as elements, and a code block has its copy button.
        browser.execute_script("localStorage.setItem('lumen.conversations', arguments[0]);", json.dumps([
            {"id": "t", "title": "table", "messages": [
                {"role": "user", "content": "a table please"},
                {"role": "assistant", "content": HOSTILE_TABLE + "\n```js\nlet x = 1;\n```"}]}]))
        browser.refresh()
        wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, ".message.assistant table"), 10, "the table")
        assert len(browser.find_elements(By.CSS_SELECTOR, ".message.assistant table tr")) == 4
        assert browser.find_elements(By.CSS_SELECTOR, ".message.assistant blockquote blockquote")
        assert not browser.find_elements(By.CSS_SELECTOR, ".message img, .message script, .message iframe, .message svg")
        copy_buttons = browser.find_elements(By.CSS_SELECTOR, ".message.assistant .code-block .copy-code")
        assert len(copy_buttons) == 2
        browser.execute_cdp_cmd("Browser.grantPermissions", {
            "origin": server.base_url, "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]})
        copy_buttons[1].click()
        wait_for(lambda: copy_buttons[1].text == "Copied", 5, "Copied")
        assert read_clipboard(browser) == "let x = 1;"

        # Empty "0 tokens · error" turns that older pages stored are not shown (nor saved again).
        browser.execute_script("localStorage.setItem('lumen.conversations', arguments[0]);", json.dumps([
            {"id": "e", "title": "hi", "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "", "stats": {"tokens": 0, "finish": "error"}}]}]))
        browser.refresh()
        wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, ".message"), 10, "the stored conversation")
        assert len(browser.find_elements(By.CSS_SELECTOR, ".message")) == 1
        assert not [e for e in browser.find_elements(By.CSS_SELECTOR, ".stats") if "error" in e.text]
    finally:
        assert server.stop() == 0, "".join(server.log)


def test_copy_regenerate_edit_and_failed_send(browser):
    server = LumenServer()
    stopped = False
    try:
        open_page(browser, server)
        browser.execute_cdp_cmd("Browser.grantPermissions", {
            "origin": server.base_url, "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]})
        by_id = lambda id: browser.find_element(By.ID, id)  # noqa: E731
        css = lambda selector: browser.find_elements(By.CSS_SELECTOR, selector)  # noqa: E731

        def answered():
            return sum(v for k, v in server.metrics().items() if k.startswith("lumen_request_success_total"))

        def wait_idle(what):
            wait_for(lambda: by_id("send").is_displayed() and not css(".message.streaming"), 20, what)

        # A send the server refuses (max_tokens 0): the error is shown inline with Retry, and no
        # empty answer is shown or kept; only the user's message is.
        by_id("max-tokens").clear()
        by_id("max-tokens").send_keys("0")
        by_id("prompt").send_keys("Say hi.", Keys.ENTER)
        wait_idle("the refused send")
        failure = wait_for(lambda: css(".send-error"), 5, "the inline error")[0]
        assert "max_tokens" in failure.text and failure.find_element(By.CSS_SELECTOR, ".retry").is_displayed()
        assert not css(".message.assistant") and len(css(".message.user")) == 1
        assert [m["role"] for m in stored_conversations(browser)[0]["messages"]] == ["user"]
        assert not by_id("error").is_displayed()

        # Retry, with a valid max_tokens, answers the same message.
        by_id("max-tokens").clear()
        by_id("max-tokens").send_keys("8")
        failure.find_element(By.CSS_SELECTOR, ".retry").click()
        wait_idle("the retried answer")
        assert not css(".send-error") and len(css(".message")) == 2
        answer = css(".message.assistant .content")[0].text
        assert answer and answered() == 1

        # Copy puts a message's text on the clipboard.
        css(".message.assistant .actions .copy")[0].click()
        wait_for(lambda: css(".message.assistant .actions .copy")[0].text == "Copied", 5, "Copied")
        assert read_clipboard(browser) == stored_conversations(browser)[0]["messages"][1]["content"]
        css(".message.user .actions .copy")[0].click()
        wait_for(lambda: read_clipboard(browser) == "Say hi.", 5, "the user's message on the clipboard")
        # Where the clipboard API refuses (or is missing: plain http from another machine), the
        # page copies through a selection instead.
        browser.execute_script("navigator.clipboard.writeText = () => Promise.reject(new Error('refused'));")
        css(".message.assistant .actions .copy")[0].click()
        wait_for(lambda: read_clipboard(browser) != "Say hi.", 5, "the copy through a selection")
        assert read_clipboard(browser) == stored_conversations(browser)[0]["messages"][1]["content"]
        assert css(".message.assistant .actions .copy")[0].text == "Copied"

        # Regenerate replaces the last answer (a new request), keeping two messages.
        assert len(css(".actions .regenerate")) == 1
        css(".message.assistant .actions .regenerate")[0].click()
        wait_idle("the regenerated answer")
        wait_for(lambda: answered() == 2, 5, "the second request")
        assert len(css(".message")) == 2
        assert [m["role"] for m in stored_conversations(browser)[0]["messages"]] == ["user", "assistant"]

        # Edit a user message: the conversation is sent again from it.
        css(".message.user .actions .edit")[0].click()
        box = css(".message.user .edit-box")[0]
        assert box.get_attribute("value") == "Say hi."
        box.clear()
        box.send_keys("Say bye.")
        css(".message.user .save-edit")[0].click()
        wait_idle("the answer to the edited message")
        wait_for(lambda: answered() == 3, 5, "the third request")
        assert [e.text for e in css(".message.user .content")] == ["Say bye."]
        messages = stored_conversations(browser)[0]["messages"]
        assert [m["role"] for m in messages] == ["user", "assistant"] and messages[0]["content"] == "Say bye."
        assert messages[1]["content"]

        # The server goes away: the send fails inline and the history keeps no empty turn.
        assert server.stop() == 0, "".join(server.log)
        stopped = True
        by_id("prompt").send_keys("Are you there?", Keys.ENTER)
        wait_idle("the failed send")
        failure = wait_for(lambda: css(".send-error"), 5, "the inline error")[0]
        assert "Failed to fetch" in failure.text, failure.text
        assert len(css(".message")) == 3 and not [e for e in css(".stats") if "error" in e.text]
        messages = stored_conversations(browser)[0]["messages"]
        assert [m["role"] for m in messages] == ["user", "assistant", "user"] and all(m["content"] for m in messages)
        # A new chat does not show that conversation's error.
        by_id("new-chat").click()
        assert not css(".send-error, .message") and by_id("empty-state").is_displayed()
    finally:
        if not stopped:
            assert server.stop() == 0, "".join(server.log)


def test_reasoning_folds_apart_from_the_answer(browser):
    # The built-in deepseek template with enable_thinking opens the <think> block in the prompt,
    # and the default model never closes it: its whole answer is reasoning_content. The page sends
    # no template kwargs of its own, so the test adds enable_thinking to what it sends.
    server = LumenServer("--chat-template", "deepseek")
    try:
        def by_id(id):
            return browser.find_element(By.ID, id)

        open_page(browser, server)
        browser.execute_script("""
            const plain = requestBody;
            window.requestBody = (c) => ({ ...plain(c), chat_template_kwargs: { enable_thinking: true } });""")
        by_id("max-tokens").clear()
        by_id("max-tokens").send_keys("12")
        by_id("prompt").send_keys("What is 2 + 2?")
        by_id("send").click()
        wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, ".message.assistant .stats")
                 and by_id("send").is_displayed(), 20, "the answer")
        fold = browser.find_element(By.CSS_SELECTOR, ".message.assistant .reasoning")
        thought = fold.find_element(By.CSS_SELECTOR, ".reasoning-text").text
        assert fold.is_displayed() and fold.get_attribute("open") is not None and thought.strip()
        assert browser.find_element(By.CSS_SELECTOR, ".message.assistant .content").text == ""
        assert "12 tokens" in browser.find_element(By.CSS_SELECTOR, ".message.assistant .stats").text
        # Kept (an answer cut off while thinking is not an empty turn), with its reasoning apart.
        # (Compared with the fold's DOM text: Selenium's rendered .text leaves out invisible
        # characters such as U+200B, which this model writes.)
        kept = stored_conversations(browser)[0]["messages"][1]
        shown = fold.find_element(By.CSS_SELECTOR, ".reasoning-text").get_attribute("textContent")
        assert kept["content"] == "" and kept["reasoning"].strip() == shown.strip()

        # The next send carries that turn back empty (the roles still alternate), and is answered.
        by_id("prompt").send_keys("And 3 + 3?")
        by_id("send").click()
        wait_for(lambda: len(browser.find_elements(By.CSS_SELECTOR, ".message.assistant .stats")) == 2
                 and by_id("send").is_displayed(), 20, "the second answer")
        assert not [e for e in browser.find_elements(By.CSS_SELECTOR, ".stats") if "error" in e.text]

        # A stored answer with both: the reasoning folded above the answer, as text; opened by hand;
        # Copy takes the answer alone.
        browser.execute_script("localStorage.setItem('lumen.conversations', arguments[0]);", json.dumps([
            {"id": "r", "title": "think", "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "**Four.**", "reasoning": "<img src=x onerror=alert(1)> two and two"}]}]))
        browser.refresh()
        wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, ".message.assistant .reasoning"), 10, "the fold")
        fold = browser.find_element(By.CSS_SELECTOR, ".message.assistant .reasoning")
        assert fold.get_attribute("open") is None
        fold.find_element(By.TAG_NAME, "summary").click()
        assert fold.get_attribute("open") is not None
        assert fold.find_element(By.CSS_SELECTOR, ".reasoning-text").text == "<img src=x onerror=alert(1)> two and two"
        assert not browser.find_elements(By.CSS_SELECTOR, ".message img")
        assert browser.find_element(By.CSS_SELECTOR, ".message.assistant .content strong").text == "Four."
        assert not browser.find_elements(By.CSS_SELECTOR, ".message.user .reasoning")
        browser.execute_cdp_cmd("Browser.grantPermissions", {
            "origin": server.base_url, "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]})
        copy = browser.find_element(By.CSS_SELECTOR, ".message.assistant .actions .copy")
        copy.click()
        wait_for(lambda: copy.text == "Copied", 5, "Copied")
        assert read_clipboard(browser) == "**Four.**"
    finally:
        assert server.stop() == 0, "".join(server.log)
