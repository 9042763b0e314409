"""The progress reporter: off a terminal, a line per interval with the rate and what is left, and one at the end;
a new unit starts a new phase; on a terminal, a bar."""

from __future__ import annotations

import io

from nexus_memory.core.progress import ProgressReporter, duration


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_line_per_interval_with_the_rate_and_the_time_left() -> None:
    out, clock = io.StringIO(), Clock()
    report = ProgressReporter("pipeline", every_s=60, stream=out, clock=clock)
    report(0, 10_000, "events")
    for second in range(1, 181):  # three minutes at 20 events a second, reported every second
        clock.now = second
        report(20 * second, 10_000, "events")
    lines = out.getvalue().splitlines()
    assert lines == [
        "pipeline: 1,200/10,000 events (12 %), 20.0 events/s, about 7 min left",
        "pipeline: 2,400/10,000 events (24 %), 20.0 events/s, about 6 min left",
        "pipeline: 3,600/10,000 events (36 %), 20.0 events/s, about 5 min left",
    ]


def test_the_end_of_a_phase_is_said_and_a_new_unit_is_a_new_phase() -> None:
    out, clock = io.StringIO(), Clock()
    report = ProgressReporter("forget", every_s=60, stream=out, clock=clock)
    report(1, 5, "steps")
    clock.now = 2
    report(5, 5, "steps")
    report(0, 40, "facts")
    clock.now = 4
    report(40, 40, "facts")
    report.write("done")
    assert out.getvalue().splitlines() == [
        "forget: 5 steps in 2 s (2.0 steps/s)",
        "forget: 40 facts in 2 s (20.0 facts/s)",
        "done",
    ]


def test_a_terminal_gets_a_bar() -> None:
    out = io.StringIO()
    report = ProgressReporter("consolidate", stream=out, bar=True)
    report(3, 10, "facts")
    report(10, 10, "facts")
    bars = out.getvalue().strip("\r\n").split("\r")
    assert bars[0].startswith("consolidate:  30%") and "3/10" in bars[0]
    assert bars[-1].startswith("consolidate: 100%") and "10/10" in bars[-1] and " facts/s" in bars[-1]


def test_durations_read_as_a_person_says_them() -> None:
    assert [duration(s) for s in (42, 420, 3_900)] == ["42 s", "7 min", "1 h 05 min"]


def test_a_dagster_step_logs_its_first_report_so_its_end_says_how_long_it_took() -> None:
    """A run's progress log forwards the first report and the last (those between only every PROGRESS_EVERY_S):
    the terse logger times a step from its start, not '1,853 facts in 1 s' after a minute's wait."""
    from nexus_memory_assets.loggers import PROGRESS_RECORD, progress_log

    records: list[tuple[str, int, int, str]] = []

    class Log:
        def info(self, message: str, extra: dict[str, tuple[str, int, int, str]]) -> None:
            records.append(extra[PROGRESS_RECORD])

    class Context:
        log = Log()

    log = progress_log(Context(), "embeddings gmail")  # type: ignore[arg-type]
    for done in (0, 128, 256, 300):
        log(done, 300, "facts")
    assert records == [("embeddings gmail", 0, 300, "facts"), ("embeddings gmail", 300, 300, "facts")]
