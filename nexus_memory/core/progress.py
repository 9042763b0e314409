"""Progress of long work: the callback a domain function takes, and the one reporter that shows it."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

# What long work reports as it goes: (done, total, unit), unit a plural noun ("events", "facts", "steps").
Progress = Callable[[int, int, str], None]


class ProgressReporter:
    """Shows (done, total, unit) reports: a tqdm bar on a terminal; elsewhere (a log file, a pipe) a line every
    `every_s` seconds with the rate and an estimate of what is left, and a line when the work ends.

    A new label, unit or total starts a new phase (a pipeline's facts, then its embeddings), as does a report
    after the last one ended. `write` prints a line without tearing a bar.
    """

    def __init__(
        self,
        label: str,
        *,
        every_s: float = 60.0,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
        bar: bool | None = None,
    ) -> None:
        self.label = label
        self.every_s = every_s
        self.stream = stream or sys.stderr
        self.clock = clock
        self.bar = self.stream.isatty() if bar is None else bar
        self._phase: tuple[str, str, int] | None = None
        self._tqdm: Any = None
        self._started = self._last_line = 0.0
        self._first_done = 0

    def __call__(self, done: int, total: int, unit: str) -> None:
        now = self.clock()
        if self._phase != (self.label, unit, total):
            self.close()
            self._phase = (self.label, unit, total)
            self._started = self._last_line = now
            self._first_done = done
            if self.bar:
                from tqdm import tqdm

                self._tqdm = tqdm(total=total, initial=done, unit=f" {unit}", desc=self.label, file=self.stream)
        if self._tqdm is not None:
            self._tqdm.update(done - self._tqdm.n)
        elif done >= total or now - self._last_line >= self.every_s:
            self._last_line = now
            self.write(self._line(done, total, unit, now))
        if done >= total:
            self.close()

    def write(self, line: str) -> None:
        if self._tqdm is not None:
            self._tqdm.write(line, file=self.stream)
        else:
            print(line, file=self.stream, flush=True)

    def close(self) -> None:
        if self._tqdm is not None:
            self._tqdm.close()
            self._tqdm = None
        self._phase = None

    def _line(self, done: int, total: int, unit: str, now: float) -> str:
        elapsed = now - self._started
        rate = (done - self._first_done) / elapsed if elapsed > 0 else 0.0
        if done >= total:
            speed = f" ({rate:,.1f} {unit}/s)" if rate > 0 else ""
            return f"{self.label}: {done:,} {unit} in {duration(elapsed)}{speed}"
        left = f"{rate:,.1f} {unit}/s, about {duration((total - done) / rate)} left" if rate > 0 else "just started"
        return f"{self.label}: {done:,}/{total:,} {unit} ({100 * done // max(total, 1)} %), {left}"


def duration(seconds: float) -> str:
    """A short human duration: '42 s', '7 min', '1 h 05 min'."""
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60:02d} min"
