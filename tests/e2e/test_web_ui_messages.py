"""What the chat page does with messages, in a real browser (headless Chromium through Selenium)
against a real `lumen serve` on the default model: GFM tables and blockquotes render, hostile
content in them stays text (and 3000 fuzzed strings produce only the renderer's own elements and
attributes); Copy (per message and per code block), Regenerate and Edit work; a failed send
(refused by the server, or the server gone) shows its error inline with Retry and keeps no empty
turn; a reasoning model's thinking (reasoning_content) streams into a fold above its answer, as
text, and is kept apart from it. (test_web_ui.py: the page itself.) Skipped, saying why, where
no Chromium and chromedriver are installed (scripts/setup.sh installs Debian's)."""
import json

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from conftest import LumenServer
# The fixture `browser` too: pytest finds it by its imported name.
from web_browser import browser, open_page, read_clipboard, stored_conversations, wait_for  # noqa: F401


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
