"""Synthetic releases are dynamic partitions of the release assets: one partition per release id.

A release id comes from the file name of the release in the watched directory (its stem) and is
used as a file name again by the IO manager and the publish step, so it is restricted to a safe
alphabet: letters, digits, ``.``, ``_`` and ``-``, starting with a letter or digit, at most 128
characters.
"""

from __future__ import annotations

import re

import dagster as dg

from privgate.errors import InputError

RELEASES_PARTITIONS_NAME = "releases"

releases_partitions = dg.DynamicPartitionsDefinition(name=RELEASES_PARTITIONS_NAME)

_RELEASE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def is_valid_release_id(release_id: str) -> bool:
    """True when ``release_id`` can be a partition key and a file name."""
    return bool(_RELEASE_ID.match(release_id)) and ".." not in release_id


def check_release_id(release_id: str) -> str:
    """Return ``release_id`` or raise :class:`privgate.errors.InputError` naming it."""
    if not is_valid_release_id(release_id):
        raise InputError(
            f"release id {release_id!r} is not usable as a partition key and file name; use "
            "letters, digits, '.', '_' and '-' (start with a letter or digit, at most 128 characters)"
        )
    return release_id
