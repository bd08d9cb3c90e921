"""The chat page in a real browser: headless Chromium, driven through Selenium, against a real
`lumen serve` on the default model. It loads the page under its Content-Security-Policy (and
checks the policy is enforced), sends a message and watches the answer stream in, presses Stop and
checks the server aborted the request, reads the TTFT and tok/s shown, reloads and finds the
conversation kept, and takes a screenshot (into docs/images/web-ui.png with
LUMEN_UPDATE_SCREENSHOT=1, else a temporary file). Against a server with --api-key, the page loads
without the key and works once the user types it. At 400 and 360 px the sidebar folds behind a
toggle and the composer keeps the width; an empty chat shows the model and example prompts.
(test_web_ui_messages.py: what the page does with messages.) Skipped, saying why, where no
Chromium and chromedriver are installed (scripts/setup.sh installs Debian's)."""
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
from web_browser import browser, open_page, rect, wait_for  # noqa: F401

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
