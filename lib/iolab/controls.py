"""Sliders and a Run button that replay an experiment on the live dashboard; inert, and harmless, under papermill."""

import ipywidgets as widgets
from IPython.display import display

LIMITS = {"concurrency": (1, 200), "requests": (1, 2000), "delay_ms": (0, 3000)}


def run_panel(experiment, concurrency=40, requests=200, delay_ms=1000, modes=None, note=""):
    """Show sliders for concurrency, requests and delay (and a mode menu if `modes`), and a Run button.

    Pressing Run calls `experiment(concurrency=, requests=, delay_ms=, mode=, image=)`,
    where `image` is an ipywidgets.Image for a live.Dashboard to draw into. The
    sliders' ranges bound every run a student can start; requests is raised to at
    least concurrency so every simulated user sends one.
    """
    sliders = {
        name: widgets.IntSlider(
            value=min(max(value, LIMITS[name][0]), LIMITS[name][1]),
            min=LIMITS[name][0],
            max=LIMITS[name][1],
            description=name,
            continuous_update=False,
            style={"description_width": "initial"},
        )
        for name, value in (("concurrency", concurrency), ("requests", requests), ("delay_ms", delay_ms))
    }
    mode = widgets.Dropdown(options=list(modes), description="handler") if modes else None
    button = widgets.Button(description="Run", button_style="primary", icon="play")
    status = widgets.HTML(note)
    image = widgets.Image(format="png")

    def on_run(_):
        values = {name: slider.value for name, slider in sliders.items()}
        values["requests"] = max(values["requests"], values["concurrency"])
        button.disabled = True
        status.value = "running…"
        try:
            summary = experiment(**values, mode=mode.value if mode else None, image=image)
            status.value = f"done: {summary}" if summary else "done"
        except Exception as error:  # a student's run must end in a message, not a dead button
            status.value = f"<b>run failed:</b> {type(error).__name__}: {error}"
        finally:
            button.disabled = False

    button.on_click(on_run)
    top = [*sliders.values()] + ([mode] if mode else [])
    panel = widgets.VBox([widgets.HBox(top[:2]), widgets.HBox(top[2:] + [button]), status, image])
    display(panel)
    return panel
