"""RSS profile of a run by phase: a background thread samples this process's resident memory
(/proc VmRSS) every ``interval`` seconds and keeps, per phase (a label the caller sets, e.g. the
metric running), the highest RSS seen and where the working thread was when it was reached (its
innermost privgate frames). tracemalloc cannot see NumPy/Polars/faiss buffers; RSS does."""

from __future__ import annotations

import sys
import threading
import traceback

from _mem import current_rss_mib


class RssProfile:
    def __init__(self, interval: float = 0.05) -> None:
        self.interval = interval
        self.phase = "start"
        self.peaks: dict[str, tuple[float, float, str]] = {}  # phase → (RSS at start, peak MiB, where)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> "RssProfile":
        self.set_phase("start")
        self._thread.start()
        return self

    def set_phase(self, phase: str) -> None:
        self.phase = phase
        now = current_rss_mib()
        self.peaks.setdefault(phase, (now, now, ""))

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            phase = self.phase
            rss = current_rss_mib()
            first, peak, where = self.peaks.get(phase, (rss, 0.0, ""))
            if rss > peak:
                self.peaks[phase] = (first, rss, self._where())

    def _where(self) -> str:
        me = threading.get_ident()
        stacks = [
            [f for f in traceback.extract_stack(frame) if "privgate/" in f.filename]
            for ident, frame in sys._current_frames().items()
            if ident != me
        ]
        # the thread doing the work (the gate runs metrics in a deadline thread): the deepest
        stack = max(stacks, key=len, default=[])
        return " < ".join(f"{f.filename.rsplit('privgate/', 1)[-1]}:{f.lineno} {f.name}" for f in stack[::-1][:5])

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def show(self) -> None:
        print("  RSS by phase (MiB: at start → peak; where the peak was reached):")
        for phase, (first, peak, where) in self.peaks.items():
            print(f"    {phase:<28} {first:8.0f} → {peak:8.0f}  {where}")
