"""Every lesson run in JupyterLab in headless Chromium, as in class.

Every lesson run in JupyterLab in headless Chromium as a student runs it in class: their copy,
answers typed in, Run All, widgets, Shut Down Kernel.
"""

import base64
import json
import os
import re
import secrets
import threading
import time
from pathlib import Path

import nbformat
import psutil
import pytest
from browser_figures import MATCH, title_score
from browser_lab import (
    STUDENT_SOFT_FILES,
    TOOLS_OFF_KERNEL,
    Lab,
    describe,
    lab_account,
    launch_chromium,
    missing_browser_tools,
    runs_from_servers,
    why_the_lab_cannot_run,
)
from student_copies import WITH_SOLUTIONS, unexpected_statuses, write_filled, write_student_copy
from test_glossary import anchors
from tool_paths import TOOLS_OFF_IN_BROWSER

from helpers import wait_until
from iolab.contract import TOOLS_OFF_VARIABLE

try:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
except ImportError:  # the tests skip, below
    PlaywrightTimeout = TimeoutError

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((REPO / "notebooks").glob("[0-9][0-9]-*.ipynb"))  # the lessons; the glossary has a test of its own
GLOSSARY = REPO / "notebooks" / "glossary.ipynb"
SCREENSHOTS = REPO / "build" / "browser"
# A lesson's page is photographed when its run failed. IOLAB_SCREENSHOTS=1 photographs every lesson, to look them over:
# about 1.5 s a lesson, drawing every cell at full height.
SCREENSHOT_EVERY_LESSON = os.environ.get("IOLAB_SCREENSHOTS") == "1"
# Where the student copies go: under the lab's root, so that JupyterLab can open them.
STUDENT_COPIES = SCREENSHOTS / "student-copies"
MISSING = missing_browser_tools()

pytestmark = [pytest.mark.browser, pytest.mark.skipif(MISSING is not None, reason=f"browser test skipped: {MISSING}")]

# Quick mode runs a lesson in about 15 s; these bounds only stop a hang.
OPEN_TIMEOUT_S = 60
RUN_ALL_TIMEOUT_S = 150
IDLE_POLLS, IDLE_POLL_MS = 3, 100
STARTED_WITHIN_S = 10  # how soon a Run panel must show that its run has started
GRACE_MS = 100  # for the page to draw the status the kernel sent last
# The smallest run that still draws a live figure: the panel raises requests to concurrency, one request each.
SMALLEST_RUN = {"requests": 1, "delay_ms": 100}
PLAY_FRAMES = 3  # frames the Play animation must draw to count as playing
SHUTDOWN_TIMEOUT_S = 20
CLOSE_TIMEOUT_S = 10
SETTLE_S = 5  # how long a lesson's servers may take to notice their kernel has gone
LESSON_TIMEOUT_S = 240
SCREENSHOT_MAX_PX = 32000  # the longest lesson's height with its outputs, with room to grow
MARKDOWN_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]+\)|<img\b")
TRACEBACK = re.compile(r"Traceback \(most recent call last\)|^\w+(Error|Exception): ", re.MULTILINE)

# Each code cell as the page shows it: the model's execution count and outputs, and what the DOM rendered.
CELLS_JS = """() => {
  const notebook = window.jupyterapp.shell.currentWidget.content;
  const shown = element => {
    for (let node = element; node && node !== notebook.node; node = node.parentElement) {
      if (getComputedStyle(node).display === 'none') return false;
    }
    return true;
  };
  return notebook.widgets.filter(cell => cell.model.type === 'code').map(cell => {
    const outputs = [];
    for (let i = 0; i < cell.model.outputs.length; i++) outputs.push(cell.model.outputs.get(i).toJSON());
    const images = [...cell.node.querySelectorAll('.jp-RenderedImage img')];
    const allImages = [...cell.node.querySelectorAll('.jp-OutputArea img')];
    return {
      count: cell.model.executionCount,
      source: cell.model.sharedModel.getSource().slice(0, 80),
      errors: outputs.filter(o => o.output_type === 'error').map(o => `${o.ename}: ${o.evalue}`),
      stderr: outputs.filter(o => o.output_type === 'stream' && o.name === 'stderr')
                     .map(o => Array.isArray(o.text) ? o.text.join('') : o.text).join(''),
      figures: outputs.filter(o => o.data && Object.keys(o.data).some(m => m.startsWith('image/'))).length,
      figuresRendered: images.filter(img => img.complete && img.naturalWidth > 0).length,
      widgets: outputs.filter(o => o.data && 'application/vnd.jupyter.widget-view+json' in o.data).length,
      widgetsRendered: [...cell.node.querySelectorAll('.jp-OutputArea-output')]
                         .filter(node => node.querySelector(':scope > .jupyter-widgets, .jupyter-widgets')).length,
      widgetTrouble: (cell.node.querySelector('.jp-OutputArea') || {innerText: ''}).innerText
                       .match(/Error displaying widget|Loading widget\\.\\.\\.|model not found/g) || [],
      brokenImages: allImages.filter(img => shown(img) && img.complete && img.naturalWidth === 0).length,
    };
  });
}"""

# The markdown cells at `indices`, each scrolled into view and drawn: its images (and how many loaded) and the anchors
# it renders (JupyterLab keeps an element's id as data-jupyter-id).
MARKDOWN_JS = """async indices => {
  const notebook = window.jupyterapp.shell.currentWidget.content;
  const frame = () => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)));
  const found = [];
  for (const index of indices) {
    await notebook.scrollToItem(index, 'center');
    await frame();
    const cell = notebook.widgets[index];
    const images = [...cell.node.querySelectorAll('.jp-RenderedMarkdown img')];
    await Promise.all(images.map(image => image.complete ? null : new Promise(done => {
      image.addEventListener('load', done); image.addEventListener('error', done); setTimeout(done, 5000);
    })));
    found.push({
      index,
      images: images.length,
      loaded: images.filter(image => image.complete && image.naturalWidth > 0).length,
      anchors: [...cell.node.querySelectorAll('[data-jupyter-id], [id]')]
                 .map(node => node.getAttribute('data-jupyter-id') || node.id),
    });
  }
  return found;
}"""

IDLE_JS = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const kernel = panel.sessionContext.session?.kernel;
  const prompts = [...panel.content.node.querySelectorAll('.jp-InputPrompt')].map(p => p.textContent);
  return kernel?.status === 'idle' && !prompts.some(p => p.includes('*'));
}"""

# Watches a widget for the test: every text its status shows, every frame its image shows.
WATCH_JS = """([button, key]) => {
  const panel = button.closest('.widget-vbox:has(img)');
  const record = window.__iolab = window.__iolab || {};
  const log = record[key] = {statuses: [], frames: 0};
  const status = [...panel.querySelectorAll('.widget-html-content')].pop();
  if (status) new MutationObserver(() => log.statuses.push(status.innerText))
                .observe(status, {childList: true, subtree: true, characterData: true});
  const image = panel.querySelector('img');
  new MutationObserver(() => log.frames++).observe(image, {attributes: true, attributeFilter: ['src']});
  const sliders = {};
  for (const slider of panel.querySelectorAll('.widget-slider')) {
    sliders[slider.querySelector('.widget-label').innerText.trim()] =
      Number(slider.querySelector('.widget-readout').innerText);
  }
  const select = panel.querySelector('select');
  return {sliders, modes: select ? [...select.options].map(o => o.value) : []};
}"""

# An empty, silent request through the notebook's kernel: resolves once the kernel has handled every message before it.
KERNEL_ROUND_TRIP_JS = """async () => {
  const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  await kernel.requestExecute({code: '', silent: true, store_history: false}).done;
}"""

# Who the notebook's kernel runs as, and its open-files limit, asked of the kernel itself: "euid soft hard". It binds no
# name in the student's namespace, and stores no history.
KERNEL_ACCOUNT_JS = """async () => {
  const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  const code = "print(__import__('os').geteuid(), *__import__('resource').getrlimit(__import__('resource').RLIMIT_NOFILE))";
  const future = kernel.requestExecute({code, silent: false, store_history: false});
  let text = '';
  future.onIOPub = message => { if (message.header.msg_type === 'stream') text += message.content.text; };
  await future.done;
  return text;
}"""

IMAGE_BYTES_JS = """async image => {
  const bytes = new Uint8Array(await (await fetch(image.src)).arrayBuffer());
  let text = '';
  for (const byte of bytes) text += String.fromCharCode(byte);
  return btoa(text);
}"""


class ServerWatch(threading.Thread):
    """Notes every server (a process run from servers/) that the lab's kernels start, and its listening sockets."""

    def __init__(self, lab):
        super().__init__(daemon=True)
        self.lab = lab
        self.seen = {}
        self.as_root = {}  # servers found running as root: none may, when the lab runs unprivileged
        self.stopping = threading.Event()

    def run(self):
        lab = psutil.Process(self.lab.process.pid)
        while not self.stopping.wait(0.2):
            try:
                descendants = lab.children(recursive=True)
            except psutil.Error:
                continue
            for process in descendants:
                try:
                    if process.pid not in self.seen and runs_from_servers(process.cmdline()):
                        self.seen[process.pid] = describe(process)
                        if process.uids().effective == 0:
                            self.as_root[process.pid] = self.seen[process.pid]
                except psutil.Error:
                    continue

    def stop(self):
        self.stopping.set()
        self.join()


class LessonInBrowser:
    """One lesson open in a JupyterLab tab; each step records what went wrong instead of stopping at the first."""

    def __init__(self, page, lab, path, screenshots=SCREENSHOTS):
        self.page = page
        self.lab = lab
        self.path = path
        self.notebook_path = path.relative_to(REPO).as_posix()
        self.screenshots = screenshots
        self.problems = []
        self.timings = {}

    def fail(self, message):
        self.problems.append(message)

    def open(self):
        """Opens the lesson as a double click in the file browser does, and waits for its kernel."""
        began = time.monotonic()
        self.page.evaluate("path => { window.jupyterapp.commands.execute('docmanager:open', {path}); }", self.notebook_path)
        self.page.wait_for_function(
            """path => {
              const panel = window.jupyterapp.shell.currentWidget;
              return panel?.context?.path === path && panel.sessionContext?.session?.kernel?.status === 'idle';
            }""",
            arg=self.notebook_path,
            timeout=OPEN_TIMEOUT_S * 1000,
        )
        self.timings["open"] = time.monotonic() - began
        if len(self.lab.kernels()) != 1:  # JupyterLab joined the kernel the test started, and started none of its own
            self.fail(f"{len(self.lab.kernels())} kernels run for one lesson")

    def check_kernel_programs(self, without):
        """The kernel JupyterLab joined runs without the optional programs exactly when asked to."""
        for kernel in self.lab.kernels():
            try:
                off = bool(kernel.environ().get(TOOLS_OFF_VARIABLE))
            except psutil.Error:
                continue
            if off != without:
                self.fail(f"the lesson's kernel runs {'without' if off else 'with'} the optional programs, not as asked")

    def check_kernel_account(self):
        """From inside the kernel: run as root, the test runs it unprivileged with a laptop's soft open-files limit."""
        said = self.page.evaluate(KERNEL_ACCOUNT_JS).split()
        try:
            euid, soft, hard = map(int, said)
        except ValueError:
            self.fail(f"the kernel did not say who it runs as: {said!r}")
            return
        self.timings["kernel euid, files"] = f"{euid}, {soft}/{hard}"
        account = self.lab.account
        if account is None:  # the lab runs as the test does
            if euid != os.geteuid():
                self.fail(f"the lesson's kernel runs as euid {euid}, not as the test's {os.geteuid()}")
            return
        if euid == 0 or euid != account.pw_uid:
            self.fail(f"the lesson's kernel runs as euid {euid}, not as the unprivileged {account.pw_name} ({account.pw_uid})")
        if soft != STUDENT_SOFT_FILES:
            self.fail(f"the lesson's kernel starts with a soft RLIMIT_NOFILE of {soft}, not a laptop's {STUDENT_SOFT_FILES}")

    def close(self):
        """Closes the lesson's tab, dropping its outputs: the committed notebook is never saved."""
        self.page.keyboard.press("Escape")  # whatever menu or dialog a failed step left open
        self.page.evaluate(
            """path => {
              for (const widget of [...window.jupyterapp.shell.widgets('main')]) {
                if (widget.context?.path === path) { widget.context.model.dirty = false; widget.close(); }
              }
            }""",
            self.notebook_path,
        )
        try:  # gone from the page before the next lesson opens in this tab
            self.page.wait_for_function(
                "path => ![...window.jupyterapp.shell.widgets('main')].some(widget => widget.context?.path === path)",
                arg=self.notebook_path, timeout=CLOSE_TIMEOUT_S * 1000,
            )
        except PlaywrightTimeout:
            self.fail(f"the lesson's tab was still open {CLOSE_TIMEOUT_S} s after closing it")

    def menu(self, menu, item):
        self.page.locator("#jp-MainMenu .lm-MenuBar-itemLabel", has_text=re.compile(f"^{menu}$")).click()
        self.page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{re.escape(item)}$")).click()

    def run_all(self):
        began = time.monotonic()
        self.menu("Run", "Run All Cells")
        try:
            # Idle on IDLE_POLLS polls in a row, IDLE_POLL_MS apart: not just between two cells.
            self.page.wait_for_function(
                f"""() => {{
                  window.__idlePolls = ({IDLE_JS})() ? (window.__idlePolls || 0) + 1 : 0;
                  return window.__idlePolls >= {IDLE_POLLS};
                }}""",
                polling=IDLE_POLL_MS,
                timeout=RUN_ALL_TIMEOUT_S * 1000,
            )
        except PlaywrightTimeout:
            raise AssertionError(f"Run All Cells still running after {RUN_ALL_TIMEOUT_S} s") from None
        finally:
            self.page.evaluate("() => { window.__idlePolls = 0; }")
        self.timings["run all"] = time.monotonic() - began

    def check_cells(self):
        cells = self.page.evaluate(CELLS_JS)
        assert cells, "no code cells found in the page"
        for number, cell in enumerate(cells, 1):
            where = f"code cell {number} ({cell['source'].splitlines()[0] if cell['source'] else 'empty'!r})"
            if cell["count"] is None:
                self.fail(f"{where} did not run")
            for error in cell["errors"]:
                self.fail(f"{where} raised {error}")
            if TRACEBACK.search(cell["stderr"]):
                self.fail(f"{where} printed a traceback on stderr:\n{cell['stderr'][-600:]}")
            if cell["figuresRendered"] < cell["figures"]:
                self.fail(f"{where}: {cell['figures']} figures, {cell['figuresRendered']} rendered as images")
            if cell["widgetsRendered"] < cell["widgets"] or cell["widgetTrouble"]:
                self.fail(f"{where}: {cell['widgets']} widgets, {cell['widgetsRendered']} rendered {cell['widgetTrouble']}")
            if cell["brokenImages"]:
                self.fail(f"{where} shows {cell['brokenImages']} broken-image icons")
        self.timings["cells"] = len(cells)
        return cells

    def check_markdown(self, anchors=()):
        """Every picture the markdown shows loads (a committed SVG, say), and every anchor in `anchors` is drawn."""
        cells = nbformat.read(self.path, as_version=4).cells
        wanted = {index: len(MARKDOWN_IMAGE.findall(cell.source)) for index, cell in enumerate(cells)
                  if cell.cell_type == "markdown" and (MARKDOWN_IMAGE.search(cell.source) or anchors)}
        drawn = self.page.evaluate(MARKDOWN_JS, list(wanted))
        for cell in drawn:
            if cell["loaded"] < wanted[cell["index"]]:
                self.fail(f"markdown cell {cell['index']}: {wanted[cell['index']]} pictures, {cell['loaded']} loaded")
        missing = set(anchors) - {anchor for cell in drawn for anchor in cell["anchors"]}
        if missing:
            self.fail(f"{self.path.name}: anchors not drawn: {sorted(missing)}")
        self.timings["pictures"] = sum(cell["loaded"] for cell in drawn)

    def check_no_news_prompt(self):
        toasts = self.page.locator(".Toastify__toast").all_inner_texts()
        if any("news" in toast.lower() for toast in toasts):
            self.fail(f"JupyterLab's news prompt is showing: {toasts}")

    def check_play_animations(self):
        """Each Play animation on show draws new frames when pressed."""
        plays = [play for play in self.page.locator(".widget-play").all() if play.is_visible()]
        for number, play in enumerate(plays, 1):
            button = play.locator("button").first
            button.scroll_into_view_if_needed()
            self.page.evaluate(WATCH_JS, [button.element_handle(), f"play{number}"])
            button.click()
            try:
                self.page.wait_for_function(
                    f"() => window.__iolab.play{number}.frames >= {PLAY_FRAMES}", timeout=15_000
                )
            except Exception:
                frames = self.page.evaluate(f"() => window.__iolab.play{number}.frames")
                self.fail(f"Play animation {number} drew {frames} frames in 15 s after pressing play")
            play.locator("button").nth(1).click()  # stop
        self.timings["play animations"] = len(plays)

    def check_run_panels(self):
        """Each Run panel: a run in the mode picked last draws a new figure titled with that mode, once, in time."""
        buttons = self.page.locator(".jupyter-widgets button.jupyter-button", has_text=re.compile(r"^\s*Run\s*$")).all()
        for number, button in enumerate(buttons, 1):
            self.check_run_panel(number, button)
        self.timings["run panels"] = len(buttons)

    def check_run_panel(self, number, button):
        key = f"run{number}"
        button.scroll_into_view_if_needed()
        panel = button.locator("xpath=ancestor::div[contains(@class, 'widget-vbox')][.//img][1]")
        image = panel.locator("img")
        if image.is_visible() and image.evaluate("img => img.naturalWidth === 0"):
            self.fail(f"Run panel {number} shows a broken image before its first run")
        before = image.get_attribute("src")
        state = self.page.evaluate(WATCH_JS, [button.element_handle(), key])
        modes = state["modes"]
        # Not the default mode: the figure's title then proves the menu reached the run.
        mode = max(modes[1:], key=len) if len(modes) > 1 else (modes[0] if modes else None)
        if mode:
            panel.locator("select").select_option(mode)
        sliders = state["sliders"]
        for label, value in SMALLEST_RUN.items():
            if label in sliders:
                sliders[label] = self.set_slider(panel, label, value)
        # Every request waiting its full delay one after another, plus the half-minute a run allows for start-up.
        bound_s = sliders.get("requests", 100) * sliders.get("delay_ms", 1000) / 1000 + 30
        began = time.monotonic()
        # A double press: two clicks in one turn of the page's event loop, so the second is surely sent before the
        # page can hear that the first disabled the button; the kernel gets it while the first run goes.
        clicks = button.evaluate("b => { let n = 0; b.addEventListener('click', () => n++); b.click(); b.click(); return n; }")
        if clicks != 2:
            self.fail(f"Run panel {number}: the page took {clicks} of two presses")
        try:
            self.page.wait_for_function(
                f"() => window.__iolab.{key}.statuses.some(s => s.trim().startsWith('running'))",
                timeout=STARTED_WITHIN_S * 1000,
            )
        except PlaywrightTimeout:
            self.fail(f"Run panel {number}: pressing Run started nothing within {STARTED_WITHIN_S} s")
            return
        if not button.is_disabled():
            self.fail(f"Run panel {number}: the Run button stays pressable while its run goes")
        try:
            self.page.wait_for_function("b => !b.disabled", arg=button.element_handle(), timeout=bound_s * 1000)
        except PlaywrightTimeout:
            self.fail(f"Run panel {number}: the run did not end within its bound of {bound_s:.0f} s")
            return
        took = time.monotonic() - began
        # The kernel handles its messages in order: once an empty request sent now has its answer, the second
        # press has been handled too, and a second run it started would have said "running" by then.
        self.page.evaluate(KERNEL_ROUND_TRIP_JS)
        self.page.wait_for_timeout(GRACE_MS)
        log = self.page.evaluate(f"() => window.__iolab.{key}")
        starts = sum(1 for status in log["statuses"] if status.strip().startswith("running"))
        final = log["statuses"][-1] if log["statuses"] else ""
        if starts != 1:
            self.fail(f"Run panel {number}: pressing Run twice started {starts} runs (statuses {log['statuses']})")
        if not final.startswith("done"):
            self.fail(f"Run panel {number} ended with {final!r}")
        if not image.is_visible() or image.get_attribute("src") == before or not log["frames"]:
            self.fail(f"Run panel {number} shows no new figure after its run")
            return
        png = base64.b64decode(image.evaluate(IMAGE_BYTES_JS))
        score = self.check_title(number, png, mode, modes)
        self.timings[f"run panel {number}"] = f"{mode}: {took:.1f} s, {log['frames']} frames, title match {score:.2f}"

    def set_slider(self, panel, label, value):
        """Types `value` into a slider's readout, as a student may; returns the value the slider took (clamped)."""
        slider = panel.locator(".widget-slider", has=self.page.locator(".widget-label", has_text=re.compile(f"^{label}$")))
        readout = slider.locator(".widget-readout")
        readout.fill(str(value))
        readout.press("Enter")
        return int(readout.inner_text())

    def check_title(self, number, png, mode, modes):
        """The title names the mode that ran, and reads as no other mode; returns how well it matched."""
        if not mode:
            return float("nan")
        score = title_score(png, mode)
        if score < MATCH:
            self.fail(f"Run panel {number}: the figure's title does not read {mode!r} (match {score:.2f} < {MATCH})")
        for other in modes:
            if other not in mode and (other_score := title_score(png, other)) >= score:
                self.fail(f"Run panel {number}: the title reads {other!r} ({other_score:.2f}) as well as {mode!r} ({score:.2f})")
        return score

    def screenshot(self):
        """The whole notebook in one picture: the viewport made as tall as the notebook (at most SCREENSHOT_MAX_PX)."""
        self.screenshots.mkdir(parents=True, exist_ok=True)
        # The notebook scrolls inside the page: grow the page by the part of its cells that does not fit (not by
        # the scroller's scroll height, whose scroll-past-end space grows with the page), and show it from the top.
        # Cells never shown have estimated heights until drawn, so grow again while something stays hidden.
        height = 900
        for _ in range(4):
            hidden = self.page.evaluate("""() => {
              const notebook = window.jupyterapp?.shell.currentWidget?.content?.node;
              const scroller = notebook?.querySelector('.jp-WindowedPanel-outer');
              const cells = scroller?.querySelector('.jp-WindowedPanel-viewport');
              if (!cells) return 0;  // no notebook on the page (yet): the page as it is
              scroller.scrollTop = 0;
              return cells.offsetHeight - scroller.clientHeight;
            }""")
            if hidden <= 0 or height >= SCREENSHOT_MAX_PX:
                break
            height = min(height + int(hidden) + 40, SCREENSHOT_MAX_PX)
            self.page.set_viewport_size({"width": 1280, "height": height})
            # Two frames: the newly shown cells are drawn, and their real heights replace the estimates.
            self.page.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")
        path = self.screenshots / f"{self.path.stem}.png"
        began = time.monotonic()
        self.page.screenshot(path=str(path))
        self.timings["screenshot px, s"] = (height, round(time.monotonic() - began, 2))
        self.page.set_viewport_size({"width": 1280, "height": 900})
        return path

    def shut_down_kernel(self):
        """Kernel > Shut Down Kernel; returns the kernels still running after SHUTDOWN_TIMEOUT_S."""
        self.menu("Kernel", "Shut Down Kernel")
        confirm = self.page.locator(".jp-Dialog .jp-mod-accept")

        def all_gone():
            if confirm.count():  # should this JupyterLab ask first, the student says yes
                confirm.first.click()
            return not self.lab.kernels()

        wait_until(all_gone, SHUTDOWN_TIMEOUT_S)
        return self.lab.kernels()


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """One JupyterLab server for every lesson; each lesson gets its own kernel.

    Run as root, the lab runs as an unprivileged user (browser_lab.lab_account), or the test skips saying why.
    """
    reason = why_the_lab_cannot_run()  # the answer conftest had at collection, kept
    if reason is not None:
        pytest.skip(f"browser test skipped: {reason}")
    server = Lab(tmp_path_factory.mktemp("jupyter"), lab_account())
    try:
        server.spawn()  # ready by the first page: see `page`
        yield server
    finally:
        server.stop()


def listening(process):
    return {(c.laddr.ip, c.laddr.port) for c in process.net_connections("inet") if c.status == psutil.CONN_LISTEN}


def descends_from(process, roots):
    """Whether `process` is one of `roots` or runs under one of them."""
    try:
        return any(ancestor.pid in roots for ancestor in [process, *process.parents()])
    except psutil.Error:
        return False


@pytest.fixture(scope="module")
def browser(lab):
    """One headless Chromium for every lesson, launched while the lab starts; each lesson gets a tab of its own.

    Yields (browser context, the pids of the processes at the root of the browser).
    """
    from playwright.sync_api import sync_playwright

    before = {child.pid for child in psutil.Process().children()}
    playwright = sync_playwright().start()
    try:
        chromium = launch_chromium(playwright)
        try:
            # Playwright's driver and the browser under it: the harness, not the lesson.
            roots = {child.pid for child in psutil.Process().children()} - before
            yield chromium.new_context(viewport={"width": 1280, "height": 900}), roots
        finally:
            chromium.close()
    finally:
        playwright.stop()


@pytest.fixture(autouse=True)
def no_leaks(browser):
    """conftest's leak check, but for the browser's own processes.

    Chromium starts helper processes of its own long after launch (an on-device
    model service at about 3 min): those belong to the browser, which outlives
    each test on purpose and is closed at the end of the module. What a lesson
    leaves behind is checked by the lab's marker, in run_in_browser.
    """
    _, roots = browser
    me = psutil.Process()
    before = {child.pid for child in me.children(recursive=True)}
    listening_before = listening(me)
    yield
    deadline = time.monotonic() + SETTLE_S
    while True:
        leaked = [c for c in me.children(recursive=True) if c.pid not in before and not descends_from(c, roots)]
        if not leaked or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    described = [describe(process) for process in leaked]
    for process in leaked:
        try:
            process.kill()
        except psutil.Error:
            pass
    assert not described, f"test left child processes behind: {described}"
    assert listening(me) <= listening_before, f"test left listening sockets open: {listening(me) - listening_before}"


class LabTab:
    """One Chromium tab on JupyterLab, where the lessons open one after another as in a student's tab.

    JupyterLab loads once, not once a lesson. After a test that failed, the next loads it again in a new tab, so
    nothing a failed lesson left on the page can fail the next one.
    """

    def __init__(self, lab, context):
        self.lab = lab
        self.context = context
        self.page = None

    def loaded(self):
        if self.page is None:
            self.lab.wait_ready()
            self.page = self.context.new_page()
            load_lab(self.lab, self.page, "lessons")
        return self.page

    def drop(self):
        if self.page is not None:
            self.page.close()
            self.page = None


@pytest.fixture(scope="module")
def lab_tab(lab, browser):
    context, _ = browser
    tab = LabTab(lab, context)
    try:
        yield tab
    finally:
        tab.drop()


@pytest.fixture
def page(lab_tab, request):
    """The lab's tab with JupyterLab loaded, for one lesson; a new one after a test that failed (LabTab)."""
    failed_before = request.session.testsfailed
    yield lab_tab.loaded()
    if request.session.testsfailed > failed_before:  # counted once a test's call has failed, before its teardown
        lab_tab.drop()


def load_lab(lab, page, workspace):
    """JupyterLab in `page`, in a fresh workspace whose name starts with `workspace`."""
    page.goto(lab.lab_url(f"{workspace}-{secrets.token_hex(4)}"))
    page.wait_for_function("() => window.jupyterapp?.shell?.widgets", timeout=OPEN_TIMEOUT_S * 1000)
    page.locator("#jp-MainMenu").wait_for(timeout=OPEN_TIMEOUT_S * 1000)


def open_lab(lab, page, path, kernel_name="python3"):
    """JupyterLab in a fresh workspace named after the lesson, its kernel starting while the page loads (a tab per
    lesson, as benchmarks/lessons_in_jupyterlab.py opens them)."""
    lab.start_kernel_for(path.relative_to(REPO).as_posix(), kernel_name)
    load_lab(lab, page, path.stem)


def run_in_browser(lab, page, path, screenshots=SCREENSHOTS, kernel_name="python3"):
    """Open, run, check and shut down one notebook; returns the lesson's record and what outlived its kernel.

    `kernel_name` browser_lab.TOOLS_OFF_KERNEL runs it without the optional programs."""
    watch = ServerWatch(lab)
    watch.start()
    started = time.monotonic()
    lesson = LessonInBrowser(page, lab, path, screenshots)
    try:
        gave_up = True
        try:
            began = time.monotonic()
            lab.start_kernel_for(lesson.notebook_path, kernel_name)  # JupyterLab joins its session on opening
            lesson.timings["kernel"] = time.monotonic() - began
            lesson.open()
            lesson.check_kernel_programs(without=kernel_name == TOOLS_OFF_KERNEL)
            lesson.check_kernel_account()
            lesson.run_all()
            lesson.check_cells()
            lesson.check_markdown()
            lesson.check_no_news_prompt()
            lesson.check_play_animations()
            lesson.check_run_panels()
            gave_up = False
        finally:  # what the page shows where a step found a problem or gave up; every page, if asked
            if gave_up or lesson.problems or SCREENSHOT_EVERY_LESSON:
                began = time.monotonic()
                lesson.screenshot()
                lesson.timings["screenshot"] = time.monotonic() - began
        began = time.monotonic()
        kernels_left = [describe(kernel) for kernel in lesson.shut_down_kernel()]
        lesson.timings["shutdown"] = time.monotonic() - began
    finally:
        lesson.close()
        watch.stop()
        if lab.account and watch.as_root:
            lesson.fail(f"servers ran as root from a lab run as {lab.account.pw_name}: {list(watch.as_root.values())}")
        for kernel in lab.kernels():  # after a failure above: the kernel goes, whatever happened
            kernel.kill()
    began = time.monotonic()
    wait_until(lambda: not lab.started_processes(), SETTLE_S)
    left = lab.started_processes()
    lesson.timings["settle"] = time.monotonic() - began
    left_described = [describe(process) for process in left]
    for process in left:
        process.kill()
    lesson.timings["total"] = time.monotonic() - started
    print(f"{path.stem} ({kernel_name}): {lesson.timings}; servers started: {len(watch.seen)}")
    # Compared by content, not bytes: other people may edit the lesson meanwhile, but never with outputs in it.
    saved = [cell for cell in json.loads(path.read_text())["cells"] if cell.get("outputs") or cell.get("execution_count")]
    assert not saved, f"{path.name} was saved with outputs: the browser test must never save a notebook"
    assert not kernels_left, f"the kernel outlived Shut Down Kernel by {SHUTDOWN_TIMEOUT_S} s: {kernels_left}"
    return lesson, left_described


def as_a_student_has_it(path, results_dir=STUDENT_COPIES):
    """The lesson as a student runs it in class: tools/make_student.py's copy with the right answers typed in.

    Returns (the notebook to open, the results JSON it will write into `results_dir`, or None for a lesson without
    exercises).
    Papermill would run this same copy in test_make_student.py; conftest leaves it to this test when it can run.
    """
    if path not in WITH_SOLUTIONS:
        return path, None
    handed_out = write_student_copy(path, STUDENT_COPIES / "handed-out")
    results = results_dir / f"{path.stem}.json"
    results.unlink(missing_ok=True)  # a stale file from an earlier run must not pass for this one
    return write_filled(path, handed_out, STUDENT_COPIES / path.name, "right", results_path=results), results


@pytest.mark.timeout(LESSON_TIMEOUT_S)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_lesson_runs_in_the_browser(lab, page, path):
    # Some lessons run here without the optional programs, so that CI takes each lesson's path without them somewhere
    # (tool_paths.py); the rest with them, as on Binder.
    # Run unprivileged, the kernel writes its results where the lab's user may write.
    notebook, results = as_a_student_has_it(path, lab.results_dir() if lab.account else STUDENT_COPIES)
    kernel = TOOLS_OFF_KERNEL if path.stem in TOOLS_OFF_IN_BROWSER else "python3"
    lesson, left = run_in_browser(lab, page, notebook, kernel_name=kernel)
    assert not left, f"{path.stem}: left after its kernel was shut down: {left}"
    assert not lesson.problems, f"{path.stem}:\n- " + "\n- ".join(lesson.problems)
    if results:
        assert results.exists(), f"{path.stem}: the filled-in student copy wrote no results JSON to {results}"
        off = unexpected_statuses(json.loads(results.read_text()), "right")
        assert not off, f"student copy of {path.name} with right answers, in the browser: {off}"


@pytest.mark.timeout(LESSON_TIMEOUT_S)
def test_the_glossary_renders_with_every_anchor(lab, page):
    """The glossary runs nothing: opened in JupyterLab, each of its cells is drawn with every anchor a lesson may link."""
    lesson = LessonInBrowser(page, lab, GLOSSARY)
    began = time.monotonic()
    try:
        lab.start_kernel_for(lesson.notebook_path)
        lesson.open()
        lesson.check_markdown(anchors(GLOSSARY))
        kernels_left = [describe(kernel) for kernel in lesson.shut_down_kernel()]
    finally:
        lesson.close()
        for kernel in lab.kernels():
            kernel.kill()
    print(f"glossary: {time.monotonic() - began:.1f} s")
    assert not kernels_left, f"the kernel outlived Shut Down Kernel by {SHUTDOWN_TIMEOUT_S} s: {kernels_left}"
    assert not lesson.problems, "glossary:\n- " + "\n- ".join(lesson.problems)


BROKEN_CELLS = [
    'print("this cell is fine")',
    'import sys\nprint("Traceback (most recent call last):\\n  a failure printed by hand", file=sys.stderr)',
    "import ipywidgets\nipywidgets.Image(format='png')  # no bytes: the broken-image icon",
    "import time\nfrom iolab import controls\n\ndef failing_experiment(**options):\n    time.sleep(0.5)\n"
    "    raise RuntimeError('no run today')\n\npanel = controls.run_panel(failing_experiment, requests=2, delay_ms=10)",
    "1 / 0",
    'print("never reached")',
]


@pytest.mark.timeout(LESSON_TIMEOUT_S)
def test_the_checks_report_what_a_broken_notebook_shows(lab, page):
    """The checks above can fail: a notebook that gets each thing wrong is reported for each."""
    path = REPO / "build" / "browser-selftest" / "broken-lesson.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    cells = [
        {"cell_type": "code", "id": f"cell-{number}", "metadata": {}, "source": source, "outputs": [], "execution_count": None}
        for number, source in enumerate(BROKEN_CELLS)
    ]
    # A picture the markdown shows that is not there: the broken-image icon, in a markdown cell.
    cells.append({"cell_type": "markdown", "id": "cell-picture", "metadata": {}, "source": "![gone](figures/gone.svg)"})
    kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook = {"nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": kernelspec}, "cells": cells}
    path.write_text(json.dumps(notebook))
    picture = path.with_suffix(".png")
    picture.unlink(missing_ok=True)
    lesson, left = run_in_browser(lab, page, path, screenshots=path.parent)
    assert picture.exists() and picture.stat().st_size > 0, "a lesson with problems left no screenshot of its page"
    report = "\n".join(lesson.problems)
    expected = [
        "code cell 2 ('import sys') printed a traceback on stderr",
        "code cell 3 ('import ipywidgets') shows 1 broken-image icons",
        "Run panel 1 ended with 'run failed: RuntimeError: no run today'",
        "Run panel 1 shows no new figure after its run",
        "code cell 5 ('1 / 0') raised ZeroDivisionError: division by zero",
        "code cell 6 ('print(\"never reached\")') did not run",
        f"markdown cell {len(BROKEN_CELLS)}: 1 pictures, 0 loaded",
    ]
    missing = [line for line in expected if line not in report]
    assert not missing, f"not reported: {missing}\nreported:\n{report}"
    assert len(lesson.problems) == len(expected), report
    assert not left, left
