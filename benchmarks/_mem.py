"""Peak resident memory of this process (Linux /proc), resettable between measurements."""

from __future__ import annotations

from pathlib import Path


def peak_rss_mib() -> float:
    """Peak RSS (VmHWM) since start or the last reset, in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def current_rss_mib() -> float:
    """Resident memory now (VmRSS), in MiB; NaN where /proc has no such line."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def reset_peak() -> bool:
    """Reset the peak RSS counter (writes 5 to /proc/self/clear_refs); False where unsupported."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False
