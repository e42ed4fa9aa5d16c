"""``PrivgateTranslator``: how privgate's Dagster factories name and describe what they build.

Every factory of :mod:`privgate.dagster` (:func:`~privgate.dagster.build_privgate_checks`,
:func:`~privgate.dagster.build_privgate_family_checks`,
:func:`~privgate.dagster.build_privgate_scorecards`,
:func:`~privgate.dagster.build_generator_audit`,
:func:`~privgate.dagster.build_audit_required_check`,
:func:`~privgate.dagster.build_definitions`) takes ``translator=`` and asks it, as
``dagster-dbt``'s ``DagsterDbtTranslator`` is asked about a dbt node, one question per attribute
of one thing it builds: its asset key, its name, its description, its metadata, and — for the
files steps leave each other — its path. Each method takes the thing's properties, a mapping
whose ``"kind"`` says what is built (the table below) and whose other keys describe it. Subclass
it and override a method to change that attribute wherever it is used::

    class MyTranslator(PrivgateTranslator):
        def get_name(self, props):
            name = super().get_name(props)
            return "privacy_" + name if props["kind"] == "check" else name

    checks = build_privgate_checks(assets=[my_release], translator=MyTranslator())

=================  ==================================================  =========================
kind               the thing (its other properties)                    asked for
=================  ==================================================  =========================
``check``          a gate check (``asset_key``; ``rule``: a gate rule,  name, metadata (the
                   None for ``gate_decision``; for metadata            ``gate_decision`` result's)
                   ``reports``, ``steps``)
``pool``           the concurrency pool of a dataset (``dataset``)     name
``op``             the check op or by-family graph (``asset_key``,     name, description
                   ``name_prefix``; ``steps`` for the graph)
``step``           a metric family's step (``family``)                 name
``step_op``        one op of a by-family graph (``asset_key``,         name, description
                   ``step``, ``name_prefix``; ``members``)
``join``           the join op of a by-family graph (``asset_key``)    description
``step_folder``    a by-family run's work folder (``work_dir``,        path
                   ``run``, ``asset_key``)
``scorecard``      a release asset's scorecard (``asset_key``)         asset key, description
``latest_release`` a partitioned release's newest-release view         asset key, description
                   (``asset_key``)
``audit``          a generator audit asset (``label``, ``runs``,       description, metadata
                   ``chunk_size``, ``claimed_epsilon``; ``result``)
``audit_decision`` an audit's decision (``outcome``)                   metadata
``audit_op``       one op of an audit (``audit``, ``step``, ``runs``,  name, description
                   ``chunk_size``)
``audit_versions`` an audit's generator versions (``audit``)           name
``audit_folder``   an audit run's work folder (``work_dir``, ``run``,  path
                   ``audit``, ``version``)
``audit_result``   an audit's saved result (``reports_dir``,           path
                   ``work_dir``, ``audit``, ``version``, ``run_id``)
``audit_check``    the audit-required check (``check_name``,           name, description
                   ``asset_key``, ``audit_key``)
=================  ==================================================  =========================

Asking for an attribute a kind does not have raises ``ValueError`` naming both. The defaults
are privgate's own names; derived names are ASCII only (:func:`privgate.names.identifier`,
:func:`privgate.names.path_component`). The check names default to the gate rules' names that
the GX suites built from the same configuration use too, and
:func:`~privgate.dagster.audit_check.audit_passes` reads the audit decision's metadata keys: a
translator that renames them gives up that agreement.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Mapping

import dagster as dg

from privgate.gates.config_model import Rule
from privgate.names import identifier, path_component

from .rule_checks import DECISION_CHECK

Props = Mapping[str, Any]


class PrivgateTranslator:
    """Asset keys, names, descriptions, metadata and paths of privgate's Dagster definitions (see
    the module docstring). Stateless: one instance serves any number of factories."""

    def get_asset_key(self, props: Props) -> dg.AssetKey:
        """The asset key of a ``scorecard`` (``<release asset key>_privacy_scorecard``) or a
        ``latest_release`` view (``<release asset key>_latest_release``) of ``props["asset_key"]``."""
        suffix = _choose("asset key", props, {"scorecard": "_privacy_scorecard", "latest_release": "_latest_release"})
        key = dg.AssetKey.from_coercible(props["asset_key"])
        return dg.AssetKey([*key.path[:-1], key.path[-1] + suffix])

    def get_name(self, props: Props) -> str:
        """The name of a check (``<metric>__<kind>_<severity>``, ``gate_decision``), pool
        (``privgate_<dataset>``), op or graph (``<prefix>_<asset>``), step (the family as a Python
        identifier), step op (``<prefix>_<asset>__<step>``), audit op (``<audit>__<step>``),
        audit versions (``<audit>_versions``) or audit-required check op."""
        return _choose(
            "name",
            props,
            {
                "check": _check_name,
                "pool": _pool_name,
                "op": _op_name,
                "step": _step_name,
                "step_op": lambda p: f"{_op_name(p)}__{p['step']}",
                "audit_op": lambda p: f"{p['audit']}__{p['step']}",
                "audit_versions": lambda p: f"{p['audit']}_versions",
                "audit_check": lambda p: f"{identifier(p['check_name'])}_{p['asset_key'].to_python_identifier()}",
            },
        )(props)

    def get_description(self, props: Props) -> str:
        """The description the Dagster UI shows for an op, graph, step op, join, scorecard,
        latest-release view, audit, audit op or audit-required check."""
        return _choose(
            "description",
            props,
            {
                "op": _op_description,
                "step_op": _step_description,
                "join": _join_description,
                "scorecard": _scorecard_description,
                "latest_release": _latest_release_description,
                "audit": _audit_description,
                "audit_op": _audit_op_description,
                "audit_check": _audit_check_description,
            },
        )(props)

    def get_metadata(self, props: Props) -> dict[str, Any]:
        """The metadata a result carries besides privgate's own numbers: on ``gate_decision``
        (kind ``check``) the reports' paths and, by family, the number of evaluation steps; on an
        ``audit`` the numbers a person plots across versions; on an ``audit_decision`` the audit
        rules' decision, which a release check reads."""
        return _choose(
            "metadata",
            props,
            {
                "check": _decision_metadata,
                "audit": _audit_metadata,
                "audit_decision": _audit_decision_metadata,
            },
        )(props)

    def get_path(self, props: Props) -> Path:
        """Where steps leave files: a by-family run's work folder (``<work root>/<root run id>/
        <asset>``), an audit run's (``<work root>/<root run id>/<audit>/<version>``), an audit's
        saved result (``<reports_dir>/audits/<audit>/<version>/<run id>.json``). The work root is
        ``work_dir``, else ``<temp dir>/privgate-steps`` (one machine only)."""
        return _choose(
            "path",
            props,
            {
                "step_folder": lambda p: _run_folder(p) / p["asset_key"].to_python_identifier(),
                "audit_folder": lambda p: _run_folder(p) / p["audit"] / path_component(p["version"], "version"),
                "audit_result": _audit_result_path,
            },
        )(props)


def named_check_spec(
    translator: PrivgateTranslator, asset_key: dg.AssetKey, rule: Rule | None, spec: dg.AssetCheckSpec
) -> dg.AssetCheckSpec:
    """privgate's spec of one check (blocking for ``block`` rules and the decision, the rule's
    description and metadata) under the translator's check name."""
    return spec._replace(name=translator.get_name({"kind": "check", "asset_key": asset_key, "rule": rule}))


def _choose(attribute: str, props: Props, by_kind: Mapping[str, Any]) -> Any:
    """What ``by_kind`` holds for ``props["kind"]``; a kind without that attribute raises."""
    kind = props.get("kind")
    if kind not in by_kind:
        raise ValueError(f"the translator gives no {attribute} for a {kind!r}; it gives one for: {', '.join(by_kind)}")
    return by_kind[kind]


# --- the defaults, one per kind ---------------------------------------------------------------


def _check_name(p: Props) -> str:
    return DECISION_CHECK if p.get("rule") is None else p["rule"].name


def _pool_name(p: Props) -> str:
    return f"privgate_{identifier(p['dataset'], 'dataset')}"


def _op_name(p: Props) -> str:
    return f"{p.get('name_prefix', 'privgate')}_{p['asset_key'].to_python_identifier()}"


def _step_name(p: Props) -> str:
    return identifier(p["family"], "dataset")


def _op_description(p: Props) -> str:
    where = p["asset_key"].to_user_string()
    if p.get("steps") is None:
        return f"privgate privacy gate on {where}"
    return (
        f"privgate privacy gate on {where}, one step per metric family ({', '.join(p['steps'])}) "
        "and a join step that decides"
    )


def _step_description(p: Props) -> str:
    return f"privgate: evaluate the {', '.join(p['members'])} metrics of the gate on {p['asset_key'].to_user_string()}"


def _join_description(p: Props) -> str:
    return f"privgate: gate {p['asset_key'].to_user_string()} on the results of the family steps"


def _scorecard_description(p: Props) -> str:
    return (
        f"privgate privacy scorecard of {p['asset_key'].to_user_string()}: the gate decision, the "
        "blocking rules' numbers and the reason for a block, per release (materialised "
        "by the privgate checks after every gate run; Metadata → Plots draws each "
        "number across releases, the Partitions tab lists the releases)"
    )


def _latest_release_description(p: Props) -> str:
    return (
        f"The newest gated release of {p['asset_key'].to_user_string()} (in partition order): its "
        "checks are that release's, passed or failed — the release asset's own check list sums up "
        "every partition. Updated by every gate run; the materialisation names the release."
    )


def _audit_description(p: Props) -> str:
    claimed = p.get("claimed_epsilon")
    return (
        f"privgate generator audit ({p['label']}): {p['runs']} runs, fanned out in steps of "
        f"{p['chunk_size']}; empirical ε lower bound"
        + (f" against the claimed ε = {claimed:g}" if claimed is not None else "")
    )


def _audit_op_description(p: Props) -> str:
    name, step = p["audit"], p["step"]
    if step == "plan":
        return (
            f"privgate audit {name}: choose the targets, check the generator takes them "
            f"and draw the design of {p['runs']} runs; fan the runs out in chunks of {p['chunk_size']}"
        )
    if step == "runs":
        return (
            f"privgate audit {name}: train and sample the generator for one chunk of runs "
            "and compute the targets' features on each release"
        )
    return f"privgate audit {name}: attack every target on the runs' releases and bound ε"


def _audit_check_description(p: Props) -> str:
    return (
        f"the generator version that made {p['asset_key'].to_user_string()} has a passing audit in "
        f"{p['audit_key'].to_user_string()}"
    )


def _decision_metadata(p: Props) -> dict[str, Any]:
    md: dict[str, Any] = {
        f"{kind}_report": dg.MetadataValue.path(str(path)) for kind, path in (p.get("reports") or {}).items()
    }
    if p.get("steps") is not None:
        md["evaluation_steps"] = dg.MetadataValue.int(p["steps"])
    return md


def _audit_metadata(p: Props) -> dict[str, Any]:
    from .audit_metadata import audit_metadata  # rounded scores, counts, seconds; ids, never a record's value

    return audit_metadata(p["result"])


def _audit_decision_metadata(p: Props) -> dict[str, Any]:
    from .audit_metadata import decision_metadata

    return decision_metadata(p["outcome"])


def _work_root(work_dir: str | None) -> Path:
    return Path(work_dir) if work_dir else Path(tempfile.gettempdir()) / "privgate-steps"


def _run_folder(p: Props) -> Path:
    """The work folder of one run and its re-executions (the root run id)."""
    run = p["run"]
    return _work_root(p.get("work_dir")) / (run.root_run_id or run.run_id)


def _audit_result_path(p: Props) -> Path:
    root = Path(p["reports_dir"]) if p.get("reports_dir") else _work_root(p.get("work_dir"))
    return root / "audits" / p["audit"] / path_component(p["version"], "version") / f"{p['run_id']}.json"


#: the translator every factory uses unless given another
DEFAULT_TRANSLATOR = PrivgateTranslator()

__all__ = ["DEFAULT_TRANSLATOR", "PrivgateTranslator", "named_check_spec"]
