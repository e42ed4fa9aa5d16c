"""``import privgate`` loads no heavy module: SciPy's stats/special/sparse, scikit-learn, LightGBM,
faiss, matplotlib, SQLAlchemy, Jinja2 and pandas are imported on first use. (Import time itself is
measured by benchmarks/bench_import.py, not by a test.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from privgate._lazy import lazy_module

REPO = Path(__file__).resolve().parents[2]
HEAVY = [
    "scipy.stats",
    "scipy.special",
    "scipy.sparse",
    "scipy.spatial",
    "sklearn",
    "lightgbm",
    "faiss",
    "matplotlib",
    "sqlalchemy",
    "jinja2",
    "pandas",
]


def test_import_privgate_loads_no_heavy_module():
    code = (
        "import json, sys; import privgate; privgate.list_metrics(); "
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO).stdout
    assert json.loads(out.strip().splitlines()[-1]) == []


def test_lazy_module_reads_the_real_module():
    st = lazy_module("scipy.stats")
    assert st.norm.ppf(0.975) == __import__("scipy.stats").stats.norm.ppf(0.975)
    assert np.allclose(st.rankdata([3.0, 1.0, 3.0]), [2.5, 1.0, 2.5])


def test_import_privgate_loads_no_engine_and_its_names_resolve_on_first_read():
    """``import privgate`` loads neither the evaluation nor the audit's engine (a command that stops
    on a gate-file typo pays for neither); its public names import their module on first read."""
    code = (
        "import json, sys; import privgate, privgate.audit.defaults, privgate.audit.limits; "
        "before = [m for m in ('privgate.evaluation', 'privgate.context', 'privgate.baselines', "
        "'privgate.audit.api', 'privgate.audit.plan') if m in sys.modules]; "
        "from privgate import evaluate, EvaluationContext; from privgate.audit import audit_generator; "
        "import privgate.evaluation as ev; import privgate.audit.api as api; "
        "print(json.dumps([before, evaluate is ev.evaluate, audit_generator is api.audit_generator, "
        "'evaluate' in dir(privgate), privgate.baselines.__name__]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO).stdout
    assert json.loads(out.strip().splitlines()[-1]) == [[], True, True, True, "privgate.baselines"]


def test_an_unknown_name_is_an_attribute_error():
    import privgate

    try:
        privgate.no_such_name  # noqa: B018
    except AttributeError as err:
        assert "no_such_name" in str(err)
    else:
        raise AssertionError("privgate.no_such_name did not raise")
