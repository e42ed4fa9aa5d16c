"""``PrivgateTranslator``: how privgate's Dagster factories name and describe what they build.

Every factory of :mod:`privgate.dagster` (:func:`~privgate.dagster.build_privgate_checks`,
:func:`~privgate.dagster.build_privgate_family_checks`,
:func:`~privgate.dagster.build_privgate_scorecards`,
:func:`~privgate.dagster.build_generator_audit`,
:func:`~privgate.dagster.build_audit_required_check`,
:func:`~privgate.dagster.build_definitions`) takes ``translator=`` and asks it for the names of
the checks, ops, graphs and concurrency pools, for the work folders of split evaluations and
audits, and for the descriptions and metadata it attaches — as ``dagster-dbt``'s
``DagsterDbtTranslator`` does for dbt models. Subclass it and override a method to change one
of them everywhere it is used::

    class MyTranslator(PrivgateTranslator):
        def get_check_name(self, asset_key, rule):
            return "privacy_" + super().get_check_name(asset_key, rule)

    checks = build_privgate_checks(assets=[my_release], translator=MyTranslator())

The defaults are privgate's own names; derived names are ASCII only
(:func:`privgate.names.identifier`, :func:`privgate.names.path_component`). The check names
default to the gate rules' names that the GX suites built from the same configuration use too,
and :func:`~privgate.dagster.audit_check.audit_passes` reads the audit decision's metadata keys: a
translator that renames them gives up that agreement.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import dagster as dg

from privgate.names import identifier, path_component

from privgate.gates.config_model import Rule

from .gate_checks import DECISION_CHECK

if TYPE_CHECKING:  # pragma: no cover
    from privgate.audit import AuditResult

class PrivgateTranslator:
    """Names, descriptions, folders and metadata of privgate's Dagster definitions (see the
    module docstring). Stateless: one instance serves any number of factories."""

    # --- the gate's checks -----------------------------------------------------------------------

    def get_check_name(self, asset_key: dg.AssetKey, rule: Rule | None) -> str:
        """The asset-check name of one gate rule on ``asset_key`` (``<metric>__<kind>_<severity>``),
        or of the overall decision when ``rule`` is None (``gate_decision``)."""
        return DECISION_CHECK if rule is None else rule.name

    def get_check_spec(self, asset_key: dg.AssetKey, rule: Rule | None,
                       spec: dg.AssetCheckSpec) -> dg.AssetCheckSpec:
        """The spec declared for one check. ``spec`` is privgate's (blocking for ``block``
        rules and the decision, the rule's description and metadata); the default names it with
        :meth:`get_check_name`."""
        return spec._replace(name=self.get_check_name(asset_key, rule))

    def get_pool(self, dataset: str) -> str:
        """The Dagster concurrency pool of a dataset's gate steps (``privgate_<dataset>``)."""
        return f"privgate_{identifier(dataset, 'dataset')}"

    def get_op_name(self, asset_key: dg.AssetKey, name_prefix: str = "privgate") -> str:
        """The check op (single step) or graph (by family) of ``asset_key``: ``<prefix>_<asset>``;
        the launchpad's ``ops: <this name>: config:`` key."""
        return f"{name_prefix}_{asset_key.to_python_identifier()}"

    def get_step_op_name(self, asset_key: dg.AssetKey, step: str, name_prefix: str = "privgate") -> str:
        """One op of a by-family evaluation (an evaluation step or the join ``gate``)."""
        return f"{self.get_op_name(asset_key, name_prefix)}__{step}"

    def get_step_name(self, family: str) -> str:
        """The default step name of a metric family (the family as a Python identifier)."""
        return identifier(family, "dataset")

    def get_op_description(self, asset_key: dg.AssetKey) -> str:
        """Description of the single-step check op."""
        return f"privgate privacy gate on {asset_key.to_user_string()}"

    def get_graph_description(self, asset_key: dg.AssetKey, steps: Sequence[str]) -> str:
        """Description of the by-family graph."""
        return (f"privgate privacy gate on {asset_key.to_user_string()}, one step per metric "
                f"family ({', '.join(steps)}) and a join step that decides")

    def get_step_description(self, asset_key: dg.AssetKey, members: Sequence[str]) -> str:
        """Description of one evaluation step (``members``: its metrics and families)."""
        return (f"privgate: evaluate the {', '.join(members)} metrics of the gate on "
                f"{asset_key.to_user_string()}")

    def get_join_description(self, asset_key: dg.AssetKey) -> str:
        """Description of the join step of a by-family evaluation."""
        return f"privgate: gate {asset_key.to_user_string()} on the results of the family steps"

    def get_decision_metadata(self, asset_key: dg.AssetKey, reports: Mapping[str, Any],
                              steps: int | None = None) -> dict[str, Any]:
        """What the ``gate_decision`` result carries besides the gate's own numbers: the paths
        of the reports written and, by family, the number of evaluation steps."""
        md: dict[str, Any] = {f"{kind}_report": dg.MetadataValue.path(str(path))
                              for kind, path in reports.items()}
        if steps is not None:
            md["evaluation_steps"] = dg.MetadataValue.int(steps)
        return md

    # --- work folders ----------------------------------------------------------------------------

    def get_work_root(self, work_dir: str | None) -> Path:
        """Where steps leave files for later steps: ``work_dir``, else
        ``<temp dir>/privgate-steps`` (one machine only)."""
        return Path(work_dir) if work_dir else Path(tempfile.gettempdir()) / "privgate-steps"

    def get_step_work_folder(self, work_dir: str | None, run: Any, asset_key: dg.AssetKey) -> Path:
        """Where the steps of one by-family run (and its re-executions: the root run id) leave
        their results for the join."""
        return (self.get_work_root(work_dir) / (run.root_run_id or run.run_id)
                / asset_key.to_python_identifier())

    def get_audit_work_folder(self, work_dir: str | None, run: Any, name: str, version: str) -> Path:
        """Where the steps of one audit run (and its re-executions) leave files."""
        return (self.get_work_root(work_dir) / (run.root_run_id or run.run_id) / name
                / path_component(version, "version"))

    def get_audit_result_path(self, reports_dir: str | None, work_dir: str | None, name: str,
                              version: str, run_id: str) -> Path:
        """Where an audit's AuditResult JSON is saved: ``<reports_dir>/audits/<name>/<version>/
        <run id>.json`` (without ``reports_dir``: under the work root)."""
        root = Path(reports_dir) if reports_dir else self.get_work_root(work_dir)
        return root / "audits" / name / path_component(version, "version") / f"{run_id}.json"

    # --- scorecards ------------------------------------------------------------------------------

    def get_scorecard_key(self, asset_key: Any) -> dg.AssetKey:
        """The scorecard asset of a release asset: ``<release asset key>_privacy_scorecard``."""
        key = dg.AssetKey.from_coercible(asset_key)
        return dg.AssetKey([*key.path[:-1], key.path[-1] + "_privacy_scorecard"])

    def get_scorecard_description(self, asset_key: dg.AssetKey) -> str:
        """Description of the scorecard asset of ``asset_key``."""
        return (f"privgate privacy scorecard of {asset_key.to_user_string()}: the gate decision, the "
                "blocking rules' numbers and the reason for a block, per release (materialised "
                "by the privgate checks after every gate run; Metadata → Plots draws each "
                "number across releases, the Partitions tab lists the releases)")

    def get_latest_release_key(self, asset_key: Any) -> dg.AssetKey:
        """The latest-release view of a partitioned release asset: ``<release asset key>_latest_release``
        (:mod:`privgate.dagster.latest`)."""
        key = dg.AssetKey.from_coercible(asset_key)
        return dg.AssetKey([*key.path[:-1], key.path[-1] + "_latest_release"])

    def get_latest_release_description(self, asset_key: dg.AssetKey) -> str:
        """Description of the latest-release view of ``asset_key``."""
        return (f"The newest gated release of {asset_key.to_user_string()} (in partition order): its "
                "checks are that release's, passed or failed — the release asset's own check list sums up "
                "every partition. Updated by every gate run; the materialisation names the release.")

    # --- generator audits ------------------------------------------------------------------------

    def get_audit_op_name(self, name: str, step: str) -> str:
        """One op of audit ``name``'s graph (``plan``, ``runs``, ``analyse``)."""
        return f"{name}__{step}"

    def get_audit_versions_name(self, name: str) -> str:
        """The dynamic partitions of audit ``name``'s generator versions."""
        return f"{name}_versions"

    def get_audit_description(self, label: str, runs: int, chunk_size: int,
                              claimed_epsilon: float | None) -> str:
        """Description of a generator audit asset."""
        return (f"privgate generator audit ({label}): {runs} runs, fanned out in steps of "
                f"{chunk_size}; empirical ε lower bound"
                + (f" against the claimed ε = {claimed_epsilon:g}" if claimed_epsilon is not None else ""))

    def get_audit_step_description(self, name: str, step: str, runs: int, chunk_size: int) -> str:
        """Description of one op of audit ``name``."""
        if step == "plan":
            return (f"privgate audit {name}: choose the targets, check the generator takes them "
                    f"and draw the design of {runs} runs; fan the runs out in chunks of {chunk_size}")
        if step == "runs":
            return (f"privgate audit {name}: train and sample the generator for one chunk of runs "
                    "and compute the targets' features on each release")
        return f"privgate audit {name}: attack every target on the runs' releases and bound ε"

    def get_audit_metadata(self, result: "AuditResult") -> dict[str, Any]:
        """The numbers a person plots across versions — rounded scores, counts and seconds; ids
        of targets and attacks, never a value of a record."""
        from .audit_metadata import audit_metadata

        return audit_metadata(result)

    def get_audit_decision_metadata(self, outcome: Any) -> dict[str, Any]:
        """The audit rules' decision (:func:`privgate.gates.audit_rules.decide_audit`): what a
        release check reads (``accepted``: pass or warn)."""
        from .audit_metadata import decision_metadata

        return decision_metadata(outcome)

    def get_audit_check_op_name(self, check_name: str, asset_key: dg.AssetKey) -> str:
        """The op of the audit-required check ``check_name`` on ``asset_key``."""
        return f"{identifier(check_name)}_{asset_key.to_python_identifier()}"

    def get_audit_check_description(self, asset_key: dg.AssetKey, audit_key: dg.AssetKey) -> str:
        """Description of the audit-required check."""
        return (f"the generator version that made {asset_key.to_user_string()} has a passing audit in "
                f"{audit_key.to_user_string()}")


#: the translator every factory uses unless given another
DEFAULT_TRANSLATOR = PrivgateTranslator()

__all__ = ["DEFAULT_TRANSLATOR", "PrivgateTranslator"]
