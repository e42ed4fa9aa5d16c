"""The key and partitions of the release asset a check factory is given, whatever form it comes
in (Dagster's ``AssetsDefinition``, ``AssetSpec`` or a coercible key).

Below every module that builds checks or scorecards for a release asset (the gate checks'
body, the scorecard, the audit check), which all read it.
"""

from __future__ import annotations

from typing import Any

import dagster as dg


def asset_key_and_partitions(asset: Any, factory: str = "build_privgate_checks") -> tuple[dg.AssetKey, Any]:
    """The key and partitions of a release asset given as an ``AssetsDefinition`` (one asset),
    an ``AssetSpec`` or anything ``AssetKey.from_coercible`` takes (no partitions)."""
    if isinstance(asset, dg.AssetsDefinition):
        if len(asset.keys) != 1:
            raise dg.DagsterInvalidDefinitionError(
                f"{factory}: {asset.node_def.name} defines {len(asset.keys)} assets; "
                "pass the release asset's key (or AssetSpec) instead"
            )
        return asset.key, asset.partitions_def
    if isinstance(asset, dg.AssetSpec):
        return asset.key, asset.partitions_def
    return dg.AssetKey.from_coercible(asset), None
