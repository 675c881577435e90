"""The Run panel's button.

One run per press, and a second press sent while a run goes starts nothing.
"""

import textwrap

import pytest
from jupyter_client.manager import start_new_kernel

from iolab import controls

REPLY_TIMEOUT_S = 60


class Clock:
    """A clock the test moves by hand, standing in for the kernel's monotonic clock."""

    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_gate_lets_one_run_at_a_time():
    gate = controls.RunGate()
    assert gate.try_start(None)
    assert not gate.try_start(None)
    gate.end()
    assert gate.try_start(None)


def test_gate_drops_a_press_sent_while_the_last_run_went():
    clock = Clock()
    gate = controls.RunGate(clock)
    pressed = 1_700_000_000.0  # the page's clock: far from the kernel's, as on Binder
    assert gate.try_start(pressed)
    clock.now += 2.0  # the run takes 2 s
    gate.end()
    # Handled only now, but sent 50 ms after the first press: the second click of a double click.
    assert not gate.try_start(pressed + 0.05)
    assert not gate.try_start(pressed + 1.99)
    assert gate.try_start(pressed + 2.2)  # a press after the page saw the run end


def test_gate_runs_a_press_of_unknown_time():
    """A press with no page time (button.click() from code, outside a kernel) runs whenever no run goes."""
    clock = Clock()
    gate = controls.RunGate(clock)
    assert gate.try_start(1_700_000_000.0)
    clock.now += 2.0
    gate.end()
    assert gate.try_start(None)


def test_outside_a_kernel_a_press_has_no_page_time():
    assert controls.click_sent_at() is None


PANEL = textwrap.dedent("""
    import time
    from iolab import controls

    runs = []

    def experiment(**values):
        runs.append(values)
        time.sleep(1.0)
        return f"run {len(runs)}"

    panel = controls.run_panel(experiment, concurrency=2, requests=2, delay_ms=10)
    button = panel.children[1].children[-1]
    print(button.model_id)
""")


class Kernel:
    """A real IPython kernel, talked to as JupyterLab talks to it: execute requests and widget messages."""

    def __init__(self):
        self.manager, self.client = start_new_kernel(kernel_name="python3", startup_timeout=REPLY_TIMEOUT_S)

    def run(self, code):
        """Runs `code`, after every message sent before it; returns what it printed."""
        printed = []

        def keep(message):
            if message["msg_type"] == "stream":
                printed.append(message["content"]["text"])
            elif message["msg_type"] == "error":
                raise AssertionError("\n".join(message["content"]["traceback"]))

        reply = self.client.execute_interactive(code, timeout=REPLY_TIMEOUT_S, output_hook=keep)
        assert reply["content"]["status"] == "ok", reply["content"]
        return "".join(printed).strip()

    def press(self, model_id):
        """What the page sends when the button is clicked: a widget's custom 'click' message."""
        content = {"comm_id": model_id, "data": {"method": "custom", "content": {"event": "click"}}}
        self.client.shell_channel.send(self.client.session.msg("comm_msg", content))

    def stop(self):
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


@pytest.fixture
def kernel():
    kernel = Kernel()
    yield kernel
    kernel.stop()


def test_a_double_click_in_a_kernel_starts_one_run(kernel):
    button = kernel.run(PANEL)
    kernel.press(button)
    kernel.press(button)  # sent while the first press's run goes: the page had not yet heard it was disabled
    # An execute request waits behind both presses, so this reads the count once both were handled.
    assert kernel.run("print(len(runs))") == "1"
    assert kernel.run("print(button.disabled, panel.children[2].value)") == "False done: run 1"
    kernel.press(button)  # a new press, sent after the run ended
    assert kernel.run("print(len(runs))") == "2"
