"""``DataLocations``: where the bundled pipeline finds releases and publishes them (the gate's own
settings are :class:`privgate.dagster.privgate_resource.PrivgateResource`).

A plain :class:`dagster.ConfigurableResource`: set it in the Definitions (see
:func:`privgate.dagster.definitions.build_definitions`), from environment variables
(``dg.EnvVar``), or per run in the launchpad.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from privgate.errors import InputLoadError
from privgate.io import SUFFIXES

from .partitions import check_release_id, is_valid_release_id

#: suffixes a release file in the watched directory may have (what ``privgate.io`` reads)
RELEASE_SUFFIXES = tuple(sorted(SUFFIXES))


class DataLocations(dg.ConfigurableResource):
    """Where the releases are watched and published.

    ``releases_dir`` is the directory the sensor watches: a file ``<release id>.<suffix>`` there is
    one synthetic release. Published releases are written to ``publish_dir/<release id>.parquet``.
    """

    releases_dir: str
    publish_dir: str

    def release_files(self) -> tuple[dict[str, Path], list[str]]:
        """Release id → file for every usable release file, and the names that were skipped
        (hidden or temporary files, unsupported suffixes, unusable ids, one id with two files)."""
        folder = Path(self.releases_dir)
        found: dict[str, list[Path]] = {}
        skipped: list[str] = []
        if not folder.is_dir():
            return {}, skipped
        for p in sorted(folder.iterdir()):
            if not p.is_file() or p.name.startswith(".") or p.name.endswith((".tmp", ".part")):
                continue
            if p.suffix.lower() not in SUFFIXES:
                skipped.append(p.name)
                continue
            if not is_valid_release_id(p.stem):
                skipped.append(p.name)
                continue
            found.setdefault(p.stem, []).append(p)
        files: dict[str, Path] = {}
        for rid, paths in found.items():
            if len(paths) == 1:
                files[rid] = paths[0]
            else:
                skipped.extend(q.name for q in paths)
        return files, skipped

    def release_file(self, release_id: str) -> Path:
        """The file of release ``release_id``; :class:`InputLoadError` when none or several,
        :class:`InputError` when the id cannot be a file name (e.g. ``../x``)."""
        check_release_id(release_id)
        folder = Path(self.releases_dir)
        matches = [folder / f"{release_id}{s}" for s in RELEASE_SUFFIXES if (folder / f"{release_id}{s}").is_file()]
        if not matches:
            raise InputLoadError(
                f"synthetic: no file for release {release_id!r} in {folder} "
                f"(looked for {release_id}.{{{','.join(s.lstrip('.') for s in RELEASE_SUFFIXES)}}})"
            )
        if len(matches) > 1:
            raise InputLoadError(
                f"synthetic: release {release_id!r} has {len(matches)} files in {folder} "
                f"({', '.join(m.name for m in matches)}); keep exactly one"
            )
        return matches[0]

    def publish_path(self, release_id: str) -> Path:
        return Path(self.publish_dir) / f"{check_release_id(release_id)}.parquet"


__all__ = ["DataLocations", "RELEASE_SUFFIXES"]
