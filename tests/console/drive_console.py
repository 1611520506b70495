#!/usr/bin/env python3
"""Drives the convstream console in headless Chromium (Debian's chromium and chromium-driver,
Python selenium) against a running `convstream serve`, and saves screenshots.

Usage: drive_console.py BASE_URL TOKEN SCREENSHOT_DIR PIPELINE...

The first pipeline must be running and filtering a moving picture on the CPU. Checks, each an
assertion (exit 1 on the first that fails):
- without a token and with a wrong one, the page shows a refusal and no pipeline;
- with the token, every PIPELINE appears, and markup in a pipeline's input or mask is shown
  as text: nothing it holds runs (the title stays, no element is made of it);
- selecting each of the first two pipelines opens the picker on that pipeline's own mask,
  and a choice left unapplied is gone when another pipeline is selected;
- selecting the first pipeline shows input and output previews that are pictures;
- the picker switches the filter (a preset, a custom matrix, a mask with border and planes, a
  per-plane mask): the answer names the frame it applies from, and the output preview's pixels
  change to match from that frame on; a zero-sum mask on chroma shows the API's warning;
- at 390 px every Stop, Start and Delete lies inside the window (element positions), the page
  does not scroll sideways, and no word of a mask is broken across lines; disabled buttons
  look disabled;
- Stop (confirmed) leaves the first pipeline listed as stopped, and Start runs it again;
- after a reload of the page, the selected pipeline's plots are drawn at once from the
  server's history (more points than the page could have seen);
- with CONSOLE_FAILED=NAME=TEXT, pipeline NAME is shown failed with its reason (holding
  TEXT) as text, and its last log lines.
"""

import json
import os
import sys
import tempfile
import time
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select, WebDriverWait

TITLE = "convstream console"


def browser(profile):
    options = webdriver.ChromeOptions()
    options.binary_location = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    for flag in [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--window-size=1440,1000",
        f"--user-data-dir={profile}",
    ]:
        options.add_argument(flag)
    service = Service(executable_path=os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver"))
    return webdriver.Chrome(options=options, service=service)


def wait(driver, what, condition, seconds=20):
    try:
        return WebDriverWait(driver, seconds, poll_frequency=0.1).until(lambda d: condition(d))
    except TimeoutException:
        raise AssertionError(f"timed out waiting for {what}; notice: {notice(driver)!r}")


def notice(driver):
    return driver.find_element(By.ID, "notice").text


def shot(driver, folder, name):
    path = os.path.join(folder, name + ".png")
    driver.save_screenshot(path)
    print(f"screenshot: {path}")


def not_injected(driver):
    """Markup the test put into names and masks must not have run or become elements."""
    title = driver.execute_script("return document.title")
    assert title == TITLE, f"the title changed to {title!r}: injected script ran"
    flag = driver.execute_script("return window.injected === undefined")
    assert flag, "an injected script set window.injected"
    images = driver.execute_script("return document.querySelectorAll('img').length")
    assert images == 2, f"{images} img elements: markup from data became elements"


def token(driver, value):
    field = driver.find_element(By.ID, "token")
    field.clear()
    field.send_keys(value)
    field.send_keys(Keys.ENTER)


def preview_stats(driver, stage):
    """Mean and standard deviation of the preview's luma, its frame index, and its mean colour
    (the average spread between a pixel's red, green and blue: near 0 for a grey picture)."""
    return driver.execute_script(
        """
        const img = document.getElementById('preview-' + arguments[0]);
        if (!img.complete || img.naturalWidth === 0) return null;
        const canvas = document.createElement('canvas');
        canvas.width = img.naturalWidth;
        canvas.height = img.naturalHeight;
        const ctx = canvas.getContext('2d');
        ctx.drawImage(img, 0, 0);
        const data = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
        let sum = 0, squares = 0, n = 0, colour = 0;
        for (let i = 0; i < data.length; i += 4) {
          const y = 0.299 * data[i] + 0.587 * data[i + 1] + 0.114 * data[i + 2];
          sum += y; squares += y * y; n += 1;
          colour += Math.max(data[i], data[i + 1], data[i + 2]) - Math.min(data[i], data[i + 1], data[i + 2]);
        }
        const mean = sum / n;
        return [mean, Math.sqrt(Math.max(0, squares / n - mean * mean)), Number(img.dataset.frame), colour / n];
        """,
        stage,
    )


def picked(driver, element_id):
    return Select(driver.find_element(By.ID, element_id)).first_selected_option.get_attribute("value")


def apply_mask(driver, preset, matrix=None, border=None, planes=None):
    Select(driver.find_element(By.ID, "preset")).select_by_value(preset)
    if matrix is not None:
        area = driver.find_element(By.ID, "matrix")
        area.clear()
        area.send_keys(matrix)
    if border is not None:
        Select(driver.find_element(By.ID, "border")).select_by_value(border)
    if planes is not None:
        Select(driver.find_element(By.ID, "planes")).select_by_value(planes)
    driver.find_element(By.ID, "apply-mask").click()
    text = wait(
        driver,
        f"the switch to {preset} to be reported",
        lambda d: (t := d.find_element(By.ID, "switch-result").text).startswith(("Mask", "Not applied")) and t,
    )
    assert text.startswith("Mask"), f"the switch was refused: {text}"
    frame = int(driver.find_element(By.ID, "switch-result").get_attribute("data-frame"))
    print(f"{preset}: {text}")
    return frame


def output_after(driver, frame, accept, what):
    """Waits for an output preview of frame `frame` or later whose stats `accept`."""
    def ready(d):
        stats = preview_stats(d, "output")
        return stats if stats and stats[2] >= frame and accept(stats) else None

    return wait(driver, what, ready, seconds=30)


def server_points(base, secret, name, wanted, seconds=30):
    """Waits until the server's history of `name` holds `wanted` points."""
    request = urllib.request.Request(f"{base}/pipelines/{name}/history", headers={"Authorization": f"Bearer {secret}"})
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with urllib.request.urlopen(request, timeout=10) as response:
            if len(json.load(response)["points"]) >= wanted:
                return
        time.sleep(0.5)
    raise AssertionError(f"the server's history of {name} never reached {wanted} points")


def select_pipeline(driver, name):
    driver.find_element(By.CSS_SELECTOR, f"tr[data-name='{name}'] th button").send_keys(Keys.ENTER)
    wait(driver, f"{name} to be selected", lambda d: d.find_element(By.ID, "detail-name").text == name)


def picker_opens_on_each_pipelines_own_mask(driver, first, second):
    """The first pipeline runs `box`, the second a named mask of the config made of
    `gaussian` with size 5: each opens the picker on its own, and a choice left unapplied does
    not follow to another pipeline or back."""
    select_pipeline(driver, first)
    wait(driver, f"{first}'s mask in the picker", lambda d: picked(d, "preset") == "box")
    assert picked(driver, "border") == "reflect" and picked(driver, "planes") == "all"
    wait(driver, "the matrix preview", lambda d: "separable" in d.find_element(By.ID, "mask-preview").text)
    print(f"{first}'s matrix: {driver.find_element(By.ID, 'mask-preview').text.splitlines()[0]}")
    Select(driver.find_element(By.ID, "preset")).select_by_value("sharpen")  # not applied
    select_pipeline(driver, second)
    wait(driver, f"{second}'s mask in the picker", lambda d: picked(d, "preset") == "gaussian")
    size = driver.find_element(By.ID, "param-size").get_attribute("value")
    assert size == "5", f"{second}'s size in the picker: {size!r}"
    wait(driver, "the 5x5 matrix", lambda d: "(5x5" in d.find_element(By.ID, "mask-preview").text)
    select_pipeline(driver, first)
    wait(driver, f"{first}'s own mask again, not the unapplied choice", lambda d: picked(d, "preset") == "box")


def plotted(driver):
    counts = {}
    for key in ("fps", "dropped", "p99"):
        area = driver.find_element(By.ID, "plot-" + key)
        counts[key] = int(area.get_attribute("data-points") or 0)
    return counts if all(counts.values()) else None


def looks_disabled(driver, element):
    style = driver.execute_script(
        "const s = getComputedStyle(arguments[0]); return [Number(s.opacity), s.cursor, s.borderStyle];", element
    )
    assert style[0] <= 0.6 and style[1] == "not-allowed", f"a disabled button looks disabled: {style}"


def phone_layout_holds(driver, pipelines):
    """At 390 px: no sideways scrolling, every Stop, Start and Delete inside the window, and no
    word of a mask or an input broken across lines."""
    wait(driver, "the phone layout", lambda d: d.execute_script("return window.innerWidth") <= 400)
    time.sleep(0.5)  # one layout after the resize
    found = driver.execute_script(
        """
        const width = window.innerWidth;
        const out = { width, page: document.documentElement.scrollWidth, table: null, outside: [], broken: [], buttons: 0 };
        const wrap = document.querySelector('.table-wrap');
        out.table = [wrap.scrollWidth, wrap.clientWidth];
        for (const button of document.querySelectorAll('#pipeline-rows td.actions button')) {
          const r = button.getBoundingClientRect();
          out.buttons += 1;
          if (r.left < 0 || r.right > width || r.width === 0) out.outside.push(button.getAttribute('aria-label') + ' ' + r.left + '..' + r.right);
        }
        for (const td of document.querySelectorAll('#pipeline-rows td.text')) {
          const walker = document.createTreeWalker(td, NodeFilter.SHOW_TEXT);
          for (let node = walker.nextNode(); node; node = walker.nextNode()) {
            const words = /[^\\s]+/g;
            let m;
            while ((m = words.exec(node.data))) {
              const range = document.createRange();
              range.setStart(node, m.index);
              range.setEnd(node, m.index + m[0].length);
              const lines = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
              if (lines.size > 1) out.broken.push(m[0]);
            }
          }
        }
        return out;
        """
    )
    print(f"phone layout: {found}")
    assert found["page"] <= found["width"], f"the page scrolls sideways: {found}"
    assert found["table"][0] <= found["table"][1], f"the table scrolls sideways: {found}"
    assert found["buttons"] == 3 * len(pipelines), f"every row's Stop, Start and Delete: {found}"
    assert not found["outside"], f"actions outside the window: {found['outside']}"
    assert not found["broken"], f"words broken across lines: {found['broken']}"


def main():
    base, secret, folder, *pipelines = sys.argv[1:]
    os.makedirs(folder, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="console-profile-") as profile:
        driver = browser(profile)
        try:
            run(driver, base, secret, folder, pipelines)
        finally:
            driver.quit()
    print("console checks passed")


def run(driver, base, secret, folder, pipelines):
    driver.get(base + "/")
    assert driver.title == TITLE, driver.title
    # No token yet: refused, nothing listed.
    wait(driver, "the missing token to be reported", lambda d: "needs an API token" in notice(d))
    assert not driver.find_elements(By.CSS_SELECTOR, "#pipeline-rows tr"), "pipelines shown without a token"
    # A wrong token: refused, nothing listed.
    token(driver, "not-the-token")
    wait(driver, "the wrong token to be refused", lambda d: "token was refused" in notice(d))
    assert not driver.find_elements(By.CSS_SELECTOR, "#pipeline-rows tr"), "pipelines shown with a wrong token"
    shot(driver, folder, "01-wrong-token")

    # The token: every pipeline appears.
    token(driver, secret)
    for name in pipelines:
        wait(driver, f"pipeline {name} to be listed", lambda d, n=name: d.find_elements(By.CSS_SELECTOR, f"tr[data-name='{n}']"))
    assert driver.execute_script("return sessionStorage.getItem('convstream.token')") == secret
    not_injected(driver)
    cells = " ".join(td.text for td in driver.find_elements(By.CSS_SELECTOR, "#pipeline-rows td"))
    print(f"table: {cells}")
    if os.environ.get("CONSOLE_INJECTED") == "1":
        assert "<img" in cells, "the markup in an input name is shown as text"
    # A failed pipeline shows its last_error beside its state, as text.
    failed = os.environ.get("CONSOLE_FAILED")
    if failed:
        name, reason = failed.split("=", 1)
        state = lambda d: d.find_element(By.CSS_SELECTOR, f"tr[data-name='{name}'] td").text
        wait(driver, f"{name} to show why it failed", lambda d: state(d).startswith("failed") and reason in state(d))
        print(f"failed state: {state(driver)!r}")
        # Selected, it shows its reason and its last log lines.
        select_pipeline(driver, name)
        wait(driver, f"{name}'s last log lines", lambda d: reason in d.find_element(By.ID, "log-lines").text)
        print(f"log lines: {driver.find_element(By.ID, 'log-lines').text!r}")
        not_injected(driver)

    first, second = pipelines[0], pipelines[1]
    picker_opens_on_each_pipelines_own_mask(driver, first, second)

    # Previews of the first pipeline.
    select_pipeline(driver, first)
    for stage in ("input", "output"):
        wait(driver, f"the {stage} preview", lambda d, s=stage: preview_stats(d, s))
    before = output_after(driver, 0, lambda s: s[1] > 20, "a detailed output picture")
    print(f"output preview before the switch: mean {before[0]:.1f}, sd {before[1]:.1f}, frame {before[2]}, colour {before[3]:.1f}")
    assert before[3] > 10, f"a colourful test picture: {before}"
    shot(driver, folder, "02-previews")

    # A preset through the picker: neutral turns the output flat grey from the frame reported.
    at = apply_mask(driver, "neutral")
    flat = output_after(driver, at, lambda s: s[1] < 3, f"a flat output from frame {at}")
    print(f"output preview after neutral: mean {flat[0]:.1f}, sd {flat[1]:.1f}, frame {flat[2]}")
    assert abs(flat[0] - before[0]) > 1 or before[1] - flat[1] > 15, "the picture changed"
    shot(driver, folder, "03-neutral")

    # A custom matrix (identity): the picture comes back.
    at = apply_mask(driver, "custom", "0 0 0\n0 1 0\n0 0 0")
    back = output_after(driver, at, lambda s: s[1] > 20, f"a detailed output from frame {at}")
    print(f"output preview after the custom identity: mean {back[0]:.1f}, sd {back[1]:.1f}, frame {back[2]}")
    wait(driver, "the table to show the new mask", lambda d: "custom" in d.find_element(By.CSS_SELECTOR, f"tr[data-name='{first}']").text)
    not_injected(driver)
    shot(driver, folder, "04-custom-matrix")

    # Border and planes: neutral on the chroma planes only, a constant border. The output
    # turns grey (no colour) and keeps its detail (luma untouched).
    at = apply_mask(driver, "neutral", border="constant", planes="chroma")
    said = driver.find_element(By.ID, "switch-result").text
    assert "border constant" in said and "planes chroma" in said, said
    grey = output_after(driver, at, lambda s: s[3] < 3 and s[1] > 20, f"a grey, detailed output from frame {at}")
    print(f"output preview after neutral on chroma: sd {grey[1]:.1f}, colour {grey[3]:.1f}, frame {grey[2]}")
    wait(driver, "the picker to open on the applied filter", lambda d: picked(d, "planes") == "chroma" and picked(d, "border") == "constant")

    # A zero-sum mask on a colour picture's chroma: the API's warning is on the page.
    at = apply_mask(driver, "laplacian", planes="all")
    warning = wait(driver, "the zero-sum chroma warning", lambda d: (t := d.find_element(By.ID, "switch-warnings").text) and "turns green" in t and t)
    print(f"warning shown: {warning[:120]}...")
    shot(driver, folder, "05-warning")
    # A per-plane mask through the picker: neutral chroma, and the warning is gone.
    driver.find_element(By.ID, "add-plane-mask").click()
    row = driver.find_elements(By.CSS_SELECTOR, "#plane-mask-rows li")[-1]
    Select(row.find_element(By.CSS_SELECTOR, "select")).select_by_value("uv")
    spec = row.find_element(By.CSS_SELECTOR, "input")
    spec.clear()
    spec.send_keys("neutral")
    driver.find_element(By.ID, "apply-mask").click()
    wait(driver, "the per-plane switch", lambda d: d.find_element(By.ID, "switch-result").text.startswith("Mask"))
    assert "turns green" not in driver.find_element(By.ID, "switch-warnings").text
    frame = int(driver.find_element(By.ID, "switch-result").get_attribute("data-frame"))
    output_after(driver, frame, lambda s: s[3] < 3, f"a grey edge map from frame {frame}")
    wait(driver, "the picker to list the plane mask", lambda d: [
        (Select(li.find_element(By.CSS_SELECTOR, "select")).first_selected_option.get_attribute("value"),
         li.find_element(By.CSS_SELECTOR, "input").get_attribute("value"))
        for li in d.find_elements(By.CSS_SELECTOR, "#plane-mask-rows li")] == [("uv", "neutral")])

    # A phone-width window: every action inside it, nothing to scroll sideways.
    driver.set_window_size(390, 1400)
    phone_layout_holds(driver, pipelines)
    shot(driver, folder, "06-phone")
    driver.set_window_size(1440, 1000)

    # Reload with confirmation: Cancel does nothing, Confirm asks for one.
    driver.find_element(By.ID, "reload-config").click()
    wait(driver, "the confirmation", lambda d: d.find_element(By.ID, "confirm").is_displayed())
    driver.find_element(By.ID, "confirm-cancel").click()
    assert "Reload requested" not in notice(driver)
    driver.find_element(By.ID, "reload-config").click()
    wait(driver, "the confirmation", lambda d: d.find_element(By.ID, "confirm").is_displayed())
    driver.find_element(By.ID, "confirm-ok").click()
    wait(driver, "the reload to be requested", lambda d: "Reload requested" in notice(d))

    # Stop with confirmation (by keyboard): the pipeline stays listed as stopped; Start runs it
    # again. Each button is enabled only in the states that allow it.
    def state_of(d):
        return d.find_element(By.CSS_SELECTOR, f"tr[data-name='{first}'] td").text

    def button(d, label):
        return d.find_element(By.CSS_SELECTOR, f"tr[data-name='{first}'] button[aria-label='{label} pipeline {first}']")

    wait(driver, f"{first} to run", lambda d: state_of(d) == "running" and button(d, "Stop").is_enabled())
    assert not button(driver, "Start").is_enabled(), "Start is disabled while it runs"
    button(driver, "Stop").send_keys(Keys.ENTER)
    wait(driver, "the confirmation", lambda d: d.find_element(By.ID, "confirm").is_displayed())
    driver.find_element(By.ID, "confirm-ok").click()
    wait(driver, f"{first} to be stopped", lambda d: state_of(d) == "stopped" and button(d, "Start").is_enabled())
    assert not button(driver, "Stop").is_enabled(), "Stop is disabled once stopped"
    looks_disabled(driver, button(driver, "Stop"))
    # States differ in shape as well as colour: each word has a mark of its own.
    marks = driver.execute_script(
        "return [...document.querySelectorAll('#pipeline-rows .state-word')].map((w) => [w.textContent, getComputedStyle(w, '::before').content]);"
    )
    print(f"state marks: {marks}")
    by_state = {word.split(" ")[0]: mark for word, mark in marks}
    assert len({by_state["stopped"], by_state["running"], by_state["failed"]}) == 3, f"a mark per state: {marks}"
    assert all(mark not in ("none", "", '""') for mark in by_state.values()), f"every state marked: {marks}"
    shot(driver, folder, "07-stopped")
    button(driver, "Start").send_keys(Keys.ENTER)
    wait(driver, "the confirmation", lambda d: d.find_element(By.ID, "confirm").is_displayed())
    driver.find_element(By.ID, "confirm-ok").click()
    wait(driver, f"{first} to run again", lambda d: state_of(d) == "running")
    not_injected(driver)

    # A reload of the page: the plots come from the server's history at once. The server has
    # three points first (one every 5 s), more than a page open for under 5 s could have seen.
    server_points(base, secret, first, 3)
    driver.refresh()
    wait(driver, "the table after the reload", lambda d: d.find_elements(By.CSS_SELECTOR, f"tr[data-name='{first}']"))
    opened = time.monotonic()
    select_pipeline(driver, first)
    points = wait(driver, "plots from the server's history", lambda d: plotted(d), seconds=10)
    elapsed = time.monotonic() - opened
    print(f"after the reload: {points} points per plot within {elapsed:.1f} s")
    # The server takes a point every 5 s; a page that kept its own would have at most one.
    # (p99 has no point for an interval without a filtered frame, as while the pipeline was stopped.)
    assert points["fps"] >= 3 and points["dropped"] >= 3 and elapsed < 5, f"plots drawn from the server's points: {points}"
    plots = driver.find_element(By.CSS_SELECTOR, ".plots").text
    for label in ("frames/s", "ms", "now", "min"):
        assert label in plots, f"an axis labelled {label!r}: {plots!r}"
    output_after(driver, 0, lambda s: s[1] > 0, "the previews after the reload")
    # The whole page in one picture (docs/console.md shows it).
    tall = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1440, min(3000, tall + 140))
    time.sleep(0.5)
    shot(driver, folder, "08-desktop")
    driver.set_window_size(390, 1400)
    time.sleep(0.5)
    driver.execute_script("window.scrollTo(0, 0)")
    shot(driver, folder, "09-phone")
    driver.execute_script("document.getElementById('detail-heading').scrollIntoView()")
    shot(driver, folder, "10-phone-detail")
    driver.set_window_size(1440, 1000)

    # A page elsewhere (here a data: URL, Origin `null`) that knows the token can neither read
    # nor change anything: its requests are refused, whatever the browser lets it send.
    driver.get("data:text/html,<title>elsewhere</title><p>elsewhere</p>")
    outcome = driver.execute_async_script(
        """
        const [base, secret, done] = arguments;
        const out = {};
        fetch(base + '/console/status', { headers: { Authorization: 'Bearer ' + secret } })
          .then((r) => { out.read = r.status; }, () => { out.read = 'blocked'; })
          .then(() => fetch(base + '/pipelines', {
            method: 'POST', mode: 'no-cors', headers: { 'Content-Type': 'text/plain' },
            body: JSON.stringify({ name: 'evil', source: { url: 'udp://127.0.0.1:9' }, sink: { url: 'null' } }),
          }))
          .then(() => { out.write = 'sent'; }, () => { out.write = 'blocked'; })
          .then(() => done(out));
        """,
        base,
        secret,
    )
    print(f"a foreign page's requests: {outcome}")
    assert outcome["read"] == "blocked", f"a foreign page read the API: {outcome}"
    driver.get(base + "/")
    wait(driver, "the table again", lambda d: d.find_elements(By.CSS_SELECTOR, f"tr[data-name='{first}']"))
    rows = driver.find_elements(By.CSS_SELECTOR, "#pipeline-rows tr")
    names = [row.get_attribute("data-name") for row in rows]
    assert "evil" not in names and len(names) == len(pipelines), f"a foreign page started a pipeline: {names}"

    # The token is kept for the tab; forgetting it makes requests refused again.
    driver.find_element(By.ID, "forget-token").click()
    driver.refresh()
    wait(driver, "the forgotten token to be needed", lambda d: "needs an API token" in notice(d))
    not_injected(driver)


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"console check failed: {e}", file=sys.stderr)
        sys.exit(1)
