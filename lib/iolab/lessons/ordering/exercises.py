"""Exercises for lesson 03, handler ordering.

`from iolab.lessons.ordering import exercises as ex; ex.q1.check(answer)`.
"""

from iolab import checks, load


class WhichOrderWaits(checks.ChoiceExercise):
    prompt = "In which order does the instant handler C have to wait: 'C,A', 'C,B', 'A,C' or 'B,C'?"
    choices = {
        "C,A": "C arrives first and is answered before A even starts sleeping.",
        "C,B": "C is answered at once, before B's timer is even set.",
        "A,C": "",
        "B,C": "B awaits a timer, which hands the loop back: C is read and answered at once.",
    }
    correct = "A,C"
    correct_text = "time.sleep holds the only thread, so C's request sits unread in its socket until A is done."
    hint_text = "Which handler keeps the IOLoop from reading the next request?"
    solution_text = "'A,C': A's time.sleep blocks the IOLoop; C is read only when A has answered."


class WhenCAnswers(checks.NumberExercise):
    prompt = "Order A,C with 1000 ms handlers, C sent 100 ms after A. When does C's answer arrive, in ms after A was sent?"
    expected = 1000
    rel_tol = 0.05
    unit = "ms"
    mistakes = {
        100: "is when C was sent. Could the server read it then?",
        1100: "would be true if C had to wait a whole handler delay of its own after being sent; it waits only for A.",
        2000: "would mean C slept too. C is instant: once A lets go of the loop, C is answered at once.",
    }
    hint_text = ["C needs no time of its own. What is it waiting for?", "When does A let go of the IOLoop?"]
    solution_text = "About 1000 ms: C waits until A's time.sleep ends, then takes no time at all."


class WhenBAnswers(checks.NumberExercise):
    prompt = ("Fire A, then B, then C, 100 ms apart, with 1000 ms handlers: when does B's answer arrive, "
              "in ms after A was sent?")
    expected = 2000
    rel_tol = 0.05
    unit = "ms"
    mistakes = {
        1100: "would be right if B's timer started when B was sent; it starts only when the loop reads B.",
        1000: "is when A answers. B has not even started waiting yet.",
    }
    hint_text = "B's one-second timer is set when the loop reads B's request. When is that?"
    solution_text = "About 2000 ms: B is read only once A is done (1000 ms), then waits its own second."


class WhenCAnswersAfterAAndB(checks.PredictThenMeasure):
    prompt = ("Fire A, then B, then C, each `gap_ms` after the one before, with handlers of `delay_ms`. "
              "Predict when C's answer arrives, in ms after A was sent.")
    rel_tol = 0.15
    unit = "ms"
    quantity = "C's answer"
    off_text = "While A sleeps, B's and C's requests sit unread. What happens to each when A lets go?"
    correct_text = "B only sets a timer when it is finally read, so C is answered in the same loop pass."
    hint_text = ["Until A has answered, the IOLoop reads nothing.", "Then it reads B, which sets a timer and yields, and C."]
    solution_text = "About delay_ms: B yields at once when the loop reaches it, so C is answered right after A."

    def measure(self, url, delay_ms, gap_ms):
        routes = [f"/sync-sleep?ms={delay_ms}", f"/async-sleep?ms={delay_ms}", "/"]
        samples = load.fire_staggered([url + route for route in routes], gap_s=gap_ms / 1000)
        return (samples[2].end - samples[0].start) * 1000


class WhenCAnswersAfterD(checks.NumberExercise):
    prompt = ("Order D,C: D burns 1000 ms of CPU, C is sent 100 ms after D. "
              "When does C's answer arrive, in ms after D was sent?")
    expected = 1000
    rel_tol = 0.05
    unit = "ms"
    mistakes = {
        100: ("would be true if the loop could serve C while D computes. D's handler has no await in it: "
              "it never hands the loop back."),
        1100: "would mean C waited a delay of its own after being sent; C is instant once the loop is free.",
        2000: "would mean C computed too. C is instant: once D lets go of the loop, C is answered at once.",
    }
    hint_text = ["What does D do that could hand the loop back?", "An event loop overlaps waiting, not computing."]
    solution_text = "About 1000 ms: burning CPU holds the loop's only thread just as time.sleep does."


class WhenCAnswersAfterOffloadedA(checks.NumberExercise):
    prompt = ("Order A′,C: A′ runs A's 1000 ms time.sleep in a thread pool and awaits it; C is sent 100 ms "
              "after A′. When does C's answer arrive, in ms after A′ was sent?")
    expected = 100
    rel_tol = 0.2
    unit = "ms"
    mistakes = {
        1000: "is when A′ answers. Which thread is asleep in time.sleep now, and which one reads C?",
        1100: "would mean C waited a whole delay after being sent; nothing holds the loop while A′'s thread sleeps.",
    }
    too_high_text = "the loop is free while a pool thread sleeps for A′: what keeps C waiting that long?"
    too_low_text = "C cannot be answered before it is sent."
    hint_text = ["Which thread sleeps, and which thread runs the IOLoop?",
                 "A′ awaits the pool's future, which hands the loop back, just as B awaits a timer."]
    solution_text = "About 100 ms, when C is sent: a pool thread sleeps for A′, and the loop answers C at once."


# q1, q2, ... in the order the notebook asks them, and statuses() for the results file.
checks.bind(globals())
