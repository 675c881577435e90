"""Exercises for lesson 01, the bank queue.

`from iolab.lessons.bank import exercises as ex; ex.q1.check(answer)`.
"""

from iolab import checks

from . import measure


class TicketThroughput(checks.NumberExercise):
    prompt = "The ticket bank, 25 customers in the hall, 0.5 s of errands each: how many customers leave per second?"
    expected = 50
    unit = "req/s"
    mistakes = {
        2: "is what one teller gives when they wait through every 0.5 s errand: that is the synchronous bank."
        " With tickets, all 25 customers run their errands in the lounge at the same time.",
        12.5: "is 25 x 0.5: customers times seconds is not a rate. Little's law says throughput = customers / time in the bank.",
        25: "would be right for 1 s errands. How many batches of 25 finish in one second when each errand takes 0.5 s?",
    }
    too_high_text = "more than the customers can supply: each of the 25 needs 0.5 s before they leave."
    too_low_text = "with tickets nobody waits for the teller, so every customer only spends their own 0.5 s in the bank."
    hint_text = [
        "With tickets, the teller never waits: how long does each customer spend in the bank?",
        "Little's law: customers in the bank = throughput x time in the bank, so throughput = 25 / 0.5 s.",
    ]
    solution_text = "25 customers / 0.5 s each = 50 req/s: the ticket bank is limited by the customers, not by the teller."


class WhatDoubles(checks.ChoiceExercise):
    prompt = ("Double the customers in the hall (concurrency 40 -> 80), same 1 s errands, one teller in the sync and ticket "
              "banks and 4 in the threaded one. Whose throughput doubles: 'sync', 'threaded', 'ticket', 'all' or 'none'?")
    choices = {
        "sync": "one teller who waits 1 s with each customer serves 1 per second however full the hall is.",
        "threaded": "4 tellers already have a customer each; the other customers wait in the hall, so it stays at 4 per second.",
        "ticket": "",
        "all": "a bank whose tellers wait with the customer is limited by its tellers, not by the hall.",
        "none": "look at the ticket bank: who limits it?",
    }
    correct = "ticket"
    correct_text = "Only the ticket bank is limited by the customers; the others are limited by tellers who wait."
    hint_text = ["Ask for each bank: is it limited by its tellers or by its customers?"]
    solution_text = "'ticket': its throughput is concurrency / delay, 80 req/s. The sync bank stays at 1, the threaded at 4."


class SyncTimeInBank(checks.NumberExercise):
    prompt = ("The synchronous bank, 40 customers always in the hall (a closed loop), 1 s per customer: "
              "in seconds, how long does a customer spend in the bank, on average, once it is running steadily?")
    expected = 40
    unit = "s"
    mistakes = {
        1: "is the teller's time with each customer. The rest of the visit is spent in the hall.",
        20: "would be the average place in a line that is getting shorter. This hall never empties: 39 others are always there.",
        200: "is the time for all 200 customers of the article's run, not for one.",
    }
    too_high_text = "longer than it takes the teller to serve everybody in the hall once."
    too_low_text = "you are forgetting the customers ahead of you: the teller serves one per second."
    hint_text = ["Little's law: customers in the bank = throughput x time in the bank.", "40 customers, 1 customer per second."]
    solution_text = "R = L / lambda = 40 / (1 per s) = 40 s: ab's '40149 ms per request' is this, not one request's work."


class TellersToMatch(checks.NumberExercise):
    prompt = ("The threaded bank has k tellers who each wait through their customer's errands. With 40 customers "
              "and 1 s errands, how many tellers k make it as fast as the ticket bank (40 req/s)?")
    expected = 40
    rel_tol, abs_tol = 0.0, 0.0
    unit = "tellers"
    mistakes = {
        4: "give 4 req/s: each teller still spends 1 s waiting with each customer.",
        2: "is the number of CPU cores here. A teller who waits uses no CPU, but you need one per waiting customer.",
        1: "is the ticket bank's teller count: one teller only suffices when customers do their errands without them.",
    }
    too_high_text = "more tellers than customers: the extra tellers have nobody to serve."
    too_low_text = "with fewer tellers than customers, someone waits in the hall while every teller waits through an errand."
    hint_text = ["A teller of the threaded bank serves one customer per second. How many per second does the ticket bank serve?"]
    solution_text = ("40: one waiting teller (thread) per customer in the hall. Threads buy concurrency by the dozen;"
                     " an event loop waits on all of them with one.")


class CounterWorkFromArticle(checks.NumberExercise):
    prompt = ("The article's ticket bank (Tornado awaiting a timer) served 39.35 customers per second with 40 in the hall "
              "and 1 s of errands. Take the shortfall from 40 per second to be the teller's counter work, done for the "
              "customers one after another as all 40 come back from the lounge together each round. How many ms of "
              "counter work per customer?")
    expected = 1000 * (1 / 39.35 - 1 / 40)
    rel_tol = 0.10
    unit = "ms"
    mistakes = {
        1000 * (40 / 39.35 - 1): "is how much longer than 1 s a whole round took;"
        " the teller spent it on the round's 40 customers.",
        1000 / 39.35: "is ab's 'time per request across all concurrent requests', total time / requests: the errands are in it.",
        40 - 39.35: "is the shortfall in customers per second, not a time.",
    }
    too_high_text = "more counter work than the round has room for: 40 counters of that would make a round far longer."
    too_low_text = "too little: 40 counters of that would hardly slow a round down."
    hint_text = [
        "At 39.35 customers per second, how long does a round of 40 customers take?",
        "A round is 1 s of errands plus 40 counters, one after another.",
    ]
    solution_text = ("A round of 40 takes 40 / 39.35 = 1.0165 s: 1 s of errands plus 40 counters, so one counter is "
                     "16.5 ms / 40 = 0.41 ms. Lesson 02 measures this, the server's CPU per request, on your machine.")


class PredictTicketThroughput(checks.PredictThenMeasure):
    prompt = "Predict the ticket bank's measured throughput (req/s) for this notebook's requests, concurrency and delay_ms."
    rel_tol = 0.10
    unit = "req/s"
    quantity = "Tornado's /async-sleep"
    off_text = "Work it out from the concurrency and the errand time only; the teller's own work is a few ms."
    correct_text = "The event loop waited on every customer's timer at once."
    hint_text = ["Every customer in the hall is in the lounge at the same time.", "throughput = concurrency / (delay_ms / 1000)"]
    solution_text = "answer = concurrency / (delay_ms / 1000): the ticket bank serves the whole hall every delay."

    def measure(self, requests=40, concurrency=8, delay_ms=200):
        return measure.measure("ticket", requests, concurrency, delay_ms, calibrate=False).rps


# q1, q2, ... in the order the notebook asks them, and statuses() for the results file.
checks.bind(globals())
