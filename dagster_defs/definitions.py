"""This project's Dagster code location: privgate's bundled pipeline (a watched folder of
releases → partitions → the gate's checks → publication), configured from the environment
(``PRIVGATE_*`` variables, listed in :mod:`privgate.dagster.definitions`).

    dagster dev -f dagster_defs/definitions.py          # or: dagster dev -w deploy/workspace.yaml

deploy/ (the Docker image, Helm values, workspaces) loads this file. A project of your own
builds its Definitions the same way, from :mod:`privgate.dagster`'s factories.
"""

from privgate.dagster import build_definitions

defs = build_definitions()
