"""Driving the chat page in headless Chromium for the e2e tests (test_web_ui.py): finding and
starting the browser, the module-scoped `browser` fixture (skipped, saying why, where no Chromium
and chromedriver are installed), waiting on the page, and reading its layout, storage and
clipboard."""
import json
import shutil
import time

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By


def find_chromium():
    browser = next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


def start_browser(browser, driver_path):
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    # --no-sandbox: CI runs as root, where Chromium's sandbox cannot start.
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1200,800",
                "--force-device-scale-factor=1", "--disable-gpu"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(options=options, service=Service(driver_path))


@pytest.fixture(scope="module")
def browser():
    found = find_chromium()
    if not found:
        pytest.skip("no Chromium and chromedriver on PATH (Debian: apt-get install chromium chromium-driver)")
    driver = start_browser(*found)
    yield driver
    driver.quit()


def wait_for(predicate, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def rect(browser, selector):
    return browser.execute_script(
        "const r = document.querySelector(arguments[0]).getBoundingClientRect();"
        "return {left: r.left, right: r.right, top: r.top, bottom: r.bottom, width: r.width};", selector)


def stored_conversations(browser):
    return json.loads(browser.execute_script("return localStorage.getItem('lumen.conversations')") or "[]")


def read_clipboard(browser):
    return browser.execute_async_script(
        "navigator.clipboard.readText().then(arguments[0], (e) => arguments[0]('error: ' + e));")


def open_page(browser, server):
    browser.get(server.base_url + "/")
    browser.execute_script("localStorage.clear();")
    browser.refresh()
    # textContent: below 700 px the sidebar, which shows the name, is folded away.
    wait_for(lambda: browser.find_element(By.ID, "model-name").get_attribute("textContent"), 10,
             "the model's name from /v1/models")
