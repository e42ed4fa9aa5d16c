"""Hand-made audit results and small generators for the audit gate tests (a module, not conftest,
so spawned worker processes can import the generators)."""

from __future__ import annotations

import numpy as np
import polars as pl

from privgate.audit import AuditResult

# values of the "real" records that no output may contain
MARKER_TEXT = "Zq7xSecretLevel"
MARKER_NUMBER = 9137.1234567


def real_frame(n: int = 300, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    levels = np.array(["north", "south", MARKER_TEXT])
    x = rng.normal(size=n)
    x[7] = MARKER_NUMBER  # an outlier: the audit's first target
    return pl.DataFrame({"x": x, "y": rng.normal(size=n), "region": levels[rng.integers(0, 3, n)]})


def copy_gen(training: pl.DataFrame, n_rows: int, seed: int) -> pl.DataFrame:
    """Not private: resamples its training rows."""
    return training.sample(n_rows, with_replacement=True, seed=seed)


def blind_gen(training: pl.DataFrame, n_rows: int, seed: int) -> pl.DataFrame:
    """Private (ε = 0): ignores its training data except for the column names and types."""
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {"x": rng.normal(size=n_rows), "y": rng.normal(size=n_rows), "region": rng.choice(["north", "south"], n_rows)}
    )


def attack(eps: float, auc: float, auc_lower: float) -> dict:
    tpr = {
        "fpr_target": 0.01,
        "tpr": 0.5,
        "tpr_ci": [0.3, 0.7],
        "fpr": 0.0,
        "fpr_ci": [0.0, 0.1],
        "fpr_resolution": 0.04,
    }
    return {
        "epsilon_lower": eps,
        "mu_lower": eps / 2,
        "direction": 1,
        "threshold": 0.5,
        "false_positives": 1,
        "runs_without": 25,
        "false_negatives": 5,
        "runs_with": 25,
        "auc": auc,
        "auc_ci": [auc - 0.1, auc + 0.05],
        "auc_lower_corrected": auc_lower,
        "tpr_at_fpr": [tpr, {**tpr, "fpr_target": 0.001}],
    }


def make_result(
    eps: float = 0.5,
    auc_lower: float = 0.55,
    *,
    claimed: float | None = 1.0,
    delta: float = 0.0,
    n_audited: int = 2,
    name: str | None = "gen",
    version: str | None = "1",
) -> AuditResult:
    """An AuditResult with hand-set numbers: ``n_audited`` audited targets (the first carries
    ``eps`` and ``auc_lower``) and one that had too few runs."""
    targets = [
        {
            "target": f"t{i}",
            "kind": "outlier",
            "real_row": 10 + i,
            "outlier_score": 2.0,
            "fit_runs": 50,
            "test_runs": 50,
            "status": "audited",
            "attacks": {"distance": attack(eps if i == 0 else 0.0, 0.7, auc_lower if i == 0 else 0.5)},
        }
        for i in range(n_audited)
    ]
    targets.append(
        {
            "target": f"t{n_audited}",
            "kind": "canary_range",
            "real_row": None,
            "outlier_score": None,
            "fit_runs": 1,
            "test_runs": 1,
            "status": "too few runs",
            "attacks": {},
        }
    )
    roc = {
        t["target"]: {"distance": {"scores": [0.9, 0.8, 0.2, 0.1], "labels": [True, False, True, False]}}
        for t in targets
        if t["attacks"]
    }
    violation = None if claimed is None or n_audited == 0 else eps > claimed
    return AuditResult(
        epsilon_lower=eps,
        delta=delta,
        confidence=0.95,
        claimed_epsilon=claimed,
        violation=violation,
        auc_lower=auc_lower,
        max_auc=0.7 if n_audited else None,
        mu_lower=eps / 2,
        epsilon_from_mu=None,
        best={"target": "t0", "kind": "outlier", "attack": "distance"} if n_audited else None,
        n_audited=n_audited,
        targets=targets,
        design={"design": "shared", "total_runs": 100, "runs": 100, "attacks": ["distance"]},
        cost={
            "runs": 100,
            "runs_failed": 0,
            "seconds_generate_total": 5.0,
            "seconds_generate_mean": 0.05,
            "seconds_generate_median": 0.05,
            "seconds_features_total": 0.2,
            "seconds_prepare": 0.1,
            "seconds_analysis": 0.1,
            "wall_seconds": 6.0,
            "workers": 1,
            "threads": 1,
            "audit_share_of_generator_time": 0.08,
        },
        generator={"name": name, "version": version},
        roc=roc,
    )


DIGEST = "ab" * 32  # a generator digest (privgate.audit.identity)


def evidence_result(
    *,
    fp: int = 25,
    fn: int = 25,
    n_out: int = 50,
    n_in: int = 50,
    claimed: float | None = 1.0,
    delta: float = 0.0,
    confidence: float = 0.95,
    n_audited: int = 2,
    auc_lower: float = 0.55,
    total_runs: int = 200,
    name: str | None = "g",
    version: str | None = "1",
    digest: str | None = DIGEST,
) -> AuditResult:
    """An AuditResult whose numbers follow from its error counts, as an audit computes them:
    target 0's attack (also the best pair) erred ``fp`` of ``n_out`` and ``fn`` of ``n_in``
    times; the other targets' attacks erred half the time. The default is an honest generator
    (no bound); ``fp=fn=0`` a proven violation of ε = 1."""
    from privgate.stats.dp_audit import epsilon_lower_bound

    alpha = 1.0 - confidence
    alpha_each = alpha / 2 / n_audited

    def one(f: int, g: int, auc: float) -> dict:
        a = attack(float(epsilon_lower_bound(f, n_out, g, n_in, delta=delta, alpha=alpha_each)), 0.7, auc)
        return {**a, "false_positives": f, "runs_without": n_out, "false_negatives": g, "runs_with": n_in}

    targets = [
        {
            "target": f"t{i}",
            "kind": "outlier",
            "real_row": 10 + i,
            "outlier_score": 2.0,
            "fit_runs": 50,
            "test_runs": 50,
            "status": "audited",
            "attacks": {"distance": one(fp, fn, auc_lower) if i == 0 else one(n_out // 2, n_in // 2, 0.4)},
        }
        for i in range(n_audited)
    ]
    targets.append(
        {
            "target": f"t{n_audited}",
            "kind": "canary_range",
            "real_row": None,
            "outlier_score": None,
            "fit_runs": 1,
            "test_runs": 1,
            "status": "too few runs",
            "attacks": {},
        }
    )
    best = {
        "target": "t0",
        "kind": "outlier",
        "attack": "distance",
        "runs_with": n_in,
        "runs_without": n_out,
        "false_positives": fp,
        "false_negatives": fn,
        "epsilon_lower": float(epsilon_lower_bound(fp, n_out, fn, n_in, delta=delta, alpha=alpha / 2)),
    }
    eps = max([best["epsilon_lower"]] + [t["attacks"]["distance"]["epsilon_lower"] for t in targets[:n_audited]])
    result = make_result(
        eps, max(auc_lower, 0.4), claimed=claimed, delta=delta, n_audited=n_audited, name=name, version=version
    )
    result.targets, result.best, result.confidence = targets, best, confidence
    result.design = {
        "design": "shared",
        "total_runs": total_runs,
        "runs": total_runs,
        "attacks": ["distance"],
        "alpha_per_test": alpha_each,
        "alpha_chosen_pair": alpha / 2,
    }
    result.generator = {"name": name, "version": version, "digest": digest}
    return result


# a generator module the CLI tests write into their work folder (``module:name`` as a user gives it)
GENERATOR_MODULE = """
import numpy as np
import polars as pl


def copy_gen(training, n_rows, seed):
    return training.sample(n_rows, with_replacement=True, seed=seed)


def blind_gen(training, n_rows, seed):
    rng = np.random.default_rng(seed)
    return pl.DataFrame({"x": rng.normal(size=n_rows), "y": rng.normal(size=n_rows),
                         "region": rng.choice(["north", "south"], n_rows)})


class Noisy:
    def __init__(self, scale=1.0):
        self.scale = scale

    def __call__(self, training, n_rows, seed):
        rng = np.random.default_rng(seed)
        out = training.sample(n_rows, with_replacement=True, seed=seed)
        return out.with_columns(pl.col("x") + rng.normal(scale=self.scale, size=n_rows))


def factory(kind):
    return copy_gen if kind == "copy" else blind_gen
"""


def work_folder(tmp_path, monkeypatch, real: pl.DataFrame, files: dict[str, str]):
    """``tmp_path`` as the current directory and on the import path, holding ``real.parquet`` and
    the given text files (generator modules, configurations): what a user's folder holds when they
    run ``privgate audit --generator module:name``."""
    real.write_parquet(tmp_path / "real.parquet")
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def typed_frame(n: int = 240, seed: int = 0) -> pl.DataFrame:
    """Every column type the gate takes: Boolean, Date, Datetime, integer, float, categorical
    (String and Categorical), each with missing values."""
    import datetime as dt

    rng = np.random.default_rng(seed)
    day0 = dt.date(2020, 1, 1)
    frame = pl.DataFrame(
        {
            "churned": rng.random(n) < 0.3,
            "signup": [day0 + dt.timedelta(days=int(d)) for d in rng.integers(0, 700, n)],
            "last_seen": [dt.datetime(2024, 1, 1) + dt.timedelta(minutes=int(m)) for m in rng.integers(0, 10**6, n)],
            "age": rng.integers(18, 90, n),
            "spend": rng.gamma(2.0, 30.0, n),
            "plan": rng.choice(["free", "basic", "pro"], n),
            "region": rng.choice(["north", "south", "east"], n),
        }
    ).with_columns(pl.col("region").cast(pl.Categorical))
    holes = rng.random((n, frame.width)) < 0.05
    return frame.with_columns(
        [pl.when(pl.Series(holes[:, j])).then(None).otherwise(pl.col(c)).alias(c) for j, c in enumerate(frame.columns)]
    )


def resample_gen(training: pl.DataFrame, n_rows: int, seed: int) -> pl.DataFrame:
    """Not private: resamples its training rows, returning every column in the dtype it was given."""
    return training.sample(n_rows, with_replacement=True, seed=seed)


def constant_gen(training: pl.DataFrame, n_rows: int, seed: int) -> pl.DataFrame:
    """Private (ε = 0): ``n_rows`` copies of one row of nulls, in the dtypes it was given (the
    dtypes are public; the data are never read)."""
    return pl.DataFrame({c: pl.Series(c, [None] * n_rows, dtype=d) for c, d in training.schema.items()})
