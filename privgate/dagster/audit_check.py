"""``build_audit_required_check``: a blocking check on a release asset that requires a passing
audit (:func:`~privgate.dagster.build_generator_audit`) of the generator version that made the
release::

    audit_ok = build_audit_required_check(my_release, audit, "generator_version")
"""

from typing import Any, Callable, Mapping

import dagster as dg

from .asset_keys import asset_key_and_partitions
from .translator import DEFAULT_TRANSLATOR, PrivgateTranslator

#: the check a release gets from :func:`build_audit_required_check`
AUDIT_CHECK = "generator_audit_passed"
#: what the check's metadata copies from the audit's materialisation
_COPIED = ("decision", "verdict", "epsilon_lower", "claimed_epsilon", "auc_lower", "n_audited")


def audit_passes(metadata: Mapping[str, Any]) -> tuple[bool, str]:
    """Whether an audit's materialisation lets a release of its generator through: the audit
    rules' decision recorded with it (:func:`privgate.gates.audit_rules.decide_audit`) accepted
    it (pass or warn). A materialisation without a decision fails closed."""

    def value(key: str) -> Any:
        v = metadata.get(key)
        return getattr(v, "value", v)

    decision = value("decision")
    if decision is None or value("accepted") is None:
        return False, "the audit's materialisation carries no decision (fails closed)"
    bound = f"ε lower bound {value('epsilon_lower')}"
    if value("claimed_epsilon") is not None:
        bound += f", claimed ε {value('claimed_epsilon')}"
    if value("accepted"):
        return True, f"the audit decided {decision} ({bound}; verdict: {value('verdict')})"
    return False, f"the audit decided {decision} ({bound}; verdict: {value('verdict')})"


def build_audit_required_check(
    release_asset: Any,
    audit_asset: Any,
    version_fn: "Callable[[dg.AssetCheckExecutionContext], str] | str" = "generator_version",
    *,
    name: str = AUDIT_CHECK,
    blocking: bool = True,
    translator: PrivgateTranslator = DEFAULT_TRANSLATOR,
) -> dg.AssetChecksDefinition:
    """A blocking check on ``release_asset``: the generator version that made the release must
    have a passing audit in ``audit_asset`` (from :func:`build_generator_audit`).

    ``version_fn``: the release's generator version — a function of the check's context, or the
    name of a metadata entry of the release's latest materialisation (of the check's partition).
    The check reads the audit's latest materialisation of that version's partition and fails
    with severity ERROR when there is none or when the audit rules did not accept it (decision
    block or error: a proven violation, an AUC lower bound over the block limit, an audit that
    checked nothing; :func:`audit_passes`). Its metadata: the version, the audit's verdict,
    ε lower bound and claim, and the audit's run id. ``translator``: names the check's op and
    describes it."""
    key, partitions_def = asset_key_and_partitions(release_asset)
    audit_key = (
        audit_asset.key
        if isinstance(audit_asset, (dg.AssetsDefinition, dg.AssetSpec))
        else dg.AssetKey.from_coercible(audit_asset)
    )
    spec = _spec(name, key, audit_key, partitions_def, blocking, translator)

    @dg.multi_asset_check(
        specs=[spec],
        name=translator.get_name({"kind": "audit_check", "check_name": name, "asset_key": key}),
        description=spec.description,
    )
    def _audit_required(context: dg.AssetCheckExecutionContext):
        partition = context.partition_key if context.has_partition_key else None
        version, why = _version(context, key, partition, version_fn)
        record = None
        if version:
            version = str(version)
            records = context.instance.fetch_materializations(
                dg.AssetRecordsFilter(asset_key=audit_key, asset_partitions=[version]), limit=1, ascending=False
            ).records
            record = records[0] if records else None
            if record is None:
                why = f"generator version {version!r} has no audit in {audit_key.to_user_string()}"
        md: dict[str, Any] = {"generator_version": dg.MetadataValue.text(str(version))}
        passed = False
        if record is not None:
            meta = record.asset_materialization.metadata if record.asset_materialization else {}
            passed, why = audit_passes(meta)
            md["audit_run_id"] = dg.MetadataValue.text(record.run_id)
            md.update({k: meta[k] for k in _COPIED if k in meta})
        prefix = f"release {partition}: " if partition is not None else ""
        yield dg.AssetCheckResult(
            check_name=name,
            asset_key=key,
            passed=passed,
            severity=dg.AssetCheckSeverity.ERROR,
            metadata=md,
            description=prefix + str(why),
        )

    return _audit_required


def _spec(
    name: str,
    key: dg.AssetKey,
    audit_key: dg.AssetKey,
    partitions_def: Any,
    blocking: bool,
    translator: PrivgateTranslator,
) -> dg.AssetCheckSpec:
    import warnings

    spec_kwargs: dict[str, Any] = {}
    if partitions_def is not None:
        spec_kwargs["partitions_def"] = partitions_def
    with warnings.catch_warnings():
        # partitioned check specs are a Dagster "preview" API (1.13): results carry the partition
        warnings.filterwarnings("ignore", message=".*partitions_def.*AssetCheckSpec.*")
        warnings.filterwarnings("ignore", category=Warning, module="dagster.*")
        return dg.AssetCheckSpec(
            name,
            asset=key,
            blocking=blocking,
            additional_deps=[audit_key],  # lineage: audit → check
            description=translator.get_description({"kind": "audit_check", "asset_key": key, "audit_key": audit_key}),
            **spec_kwargs,
        )


def _version(
    context: Any, key: dg.AssetKey, partition: str | None, version_fn: "Callable[[Any], str] | str"
) -> tuple[Any, str | None]:
    """(the release's generator version, why there is none)."""
    try:
        version = (
            version_fn(context) if callable(version_fn) else _release_metadata(context, key, partition, version_fn)
        )
    except Exception as exc:  # noqa: BLE001 - no version known: no audit can be required
        # a user's version_fn is user code: its message may quote data, keep the type only
        why = type(exc).__name__ if callable(version_fn) else f"{type(exc).__name__}: {exc}"
        return None, f"the release's generator version is unknown ({why})"
    return version, None if version else "the release's generator version is unknown"


def _release_metadata(context: Any, key: dg.AssetKey, partition: str | None, entry: str) -> Any:
    """The value of metadata entry ``entry`` of the release's latest materialisation."""
    flt = dg.AssetRecordsFilter(asset_key=key, asset_partitions=[partition] if partition is not None else None)
    records = context.instance.fetch_materializations(flt, limit=1, ascending=False).records
    if not records or records[0].asset_materialization is None:
        raise LookupError(
            f"{key.to_user_string()} has no materialisation"
            + (f" of partition {partition!r}" if partition is not None else "")
        )
    meta = records[0].asset_materialization.metadata
    if entry not in meta:
        raise LookupError(f"its latest materialisation has no metadata entry {entry!r}")
    return getattr(meta[entry], "value", meta[entry])


__all__ = ["AUDIT_CHECK", "audit_passes", "build_audit_required_check"]
