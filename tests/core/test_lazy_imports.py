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
HEAVY = ["scipy.stats", "scipy.special", "scipy.sparse", "scipy.spatial", "sklearn", "lightgbm",
         "faiss", "matplotlib", "sqlalchemy", "jinja2", "pandas"]


def test_import_privgate_loads_no_heavy_module():
    code = ("import json, sys; import privgate; privgate.list_metrics(); "
            f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=REPO).stdout
    assert json.loads(out.strip().splitlines()[-1]) == []


def test_lazy_module_reads_the_real_module():
    st = lazy_module("scipy.stats")
    assert st.norm.ppf(0.975) == __import__("scipy.stats").stats.norm.ppf(0.975)
    assert np.allclose(st.rankdata([3.0, 1.0, 3.0]), [2.5, 1.0, 2.5])
