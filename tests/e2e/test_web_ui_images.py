"""The chat page attaches images, in headless Chromium (as test_web_ui.py drives it), against
`lumen serve --mmproj` on the tiny LLaVA (scripts/vlm_tiny_llava_text.py, vlm_tiny_mmproj.py).
/v1/models says whether the server has a vision encoder, and the page shows its Image button only
then. A picked PNG is shown on the composer, sent as an image_url part (the server encodes it: a
feature-cache miss) and shown in the message; the greedy answer is the API's to the same
image and text; a reload keeps the image; a file that is not an image is refused in the page."""
import base64
import os
import sys
import tempfile
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By

from conftest import httpx, LumenServer, model_path
from web_browser import browser, open_page, stored_conversations, wait_for  # noqa: F401

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
import vlm_tiny_llava_text  # noqa: E402
import vlm_tiny_mmproj  # noqa: E402

IMAGE = REPO / "tests" / "golden" / "image" / "rgb_37x23.png"
QUESTION = "What is in the picture?"


@pytest.fixture(scope="module")
def files():
    folder = Path(os.environ.get("LUMEN_GENERATED_DIR", "/tmp/lumen-generated"))
    return vlm_tiny_llava_text.golden_text_model(folder, model_path()), vlm_tiny_mmproj.golden_mmproj("llava", folder)


def attach_button_shown(browser):
    return browser.find_element(By.ID, "attach").is_displayed()


def test_chat_page_attaches_an_image(browser, files):
    text, projector = files
    server = LumenServer("--mmproj", projector, "--max-body-size", "1M", model=text, kv_cache_memory="64M",
                         max_model_len=512)
    try:
        def by_id(id):
            return browser.find_element(By.ID, id)

        card = httpx.get(server.base_url + "/v1/models", timeout=10).json()["data"][0]
        assert card["modalities"] == {"vision": True}
        open_page(browser, server)
        wait_for(lambda: attach_button_shown(browser), 10, "the Image button")

        # A file that is not an image is refused in the page, and nothing is attached.
        with tempfile.NamedTemporaryFile(suffix=".txt", delete=False) as f:
            f.write(b"not an image")
        by_id("image-input").send_keys(f.name)
        wait_for(lambda: "is not a PNG, JPEG, WebP or GIF image" in by_id("error").text, 5, "the refusal")
        assert not browser.find_elements(By.CSS_SELECTOR, "#attachments img")

        by_id("image-input").send_keys(str(IMAGE))
        wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "#attachments img.attachment-image"), 5,
                 "the picked image on the composer")
        for field, value in (("temperature", "0"), ("max-tokens", "8")):
            by_id(field).clear()
            by_id(field).send_keys(value)
        by_id("prompt").send_keys(QUESTION)
        by_id("send").click()
        wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, ".message.assistant .stats")
                 and by_id("send").is_displayed(), 30, "the answer")
        answer = browser.find_elements(By.CSS_SELECTOR, ".message.assistant .content")[-1].text
        assert not browser.find_elements(By.CSS_SELECTOR, "#attachments img"), "the composer kept the image"
        shown = browser.find_elements(By.CSS_SELECTOR, ".message.user img.message-image")
        url = f"data:image/png;base64,{base64.b64encode(IMAGE.read_bytes()).decode()}"
        assert len(shown) == 1 and shown[0].get_attribute("src") == url
        # The server encoded one image, and answers the same image and text through the API alike.
        assert server.metrics()["lumen_image_feature_cache_misses_total"] == 1
        api = httpx.post(server.base_url + "/v1/chat/completions", timeout=60, json={
            "model": card["id"], "temperature": 0, "max_tokens": 8, "messages": [{"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": url}}, {"type": "text", "text": QUESTION}]}]})
        assert api.status_code == 200, api.text
        assert answer == api.json()["choices"][0]["message"]["content"].strip() and answer
        assert server.metrics()["lumen_image_feature_cache_hits_total"] == 1

        # Kept across a reload, image included.
        assert stored_conversations(browser)[0]["messages"][0]["images"] == [url]
        browser.refresh()
        wait_for(lambda: len(browser.find_elements(By.CSS_SELECTOR, ".message")) == 2, 10, "the stored conversation")
        assert len(browser.find_elements(By.CSS_SELECTOR, ".message.user img.message-image")) == 1
        errors = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
        assert not errors, errors
    finally:
        assert server.stop() == 0, "".join(server.log)

    # Without a vision encoder the page offers no Image button.
    server = LumenServer(model=text, kv_cache_memory="64M", max_model_len=512)
    try:
        assert httpx.get(server.base_url + "/v1/models", timeout=10).json()["data"][0]["modalities"] == {
            "vision": False}
        open_page(browser, server)
        wait_for(lambda: browser.execute_script("return document.getElementById('model-name').textContent"), 10,
                 "the model's name")
        assert not attach_button_shown(browser)
    finally:
        assert server.stop() == 0, "".join(server.log)
