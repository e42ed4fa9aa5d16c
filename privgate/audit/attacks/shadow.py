"""Shadow-model attack: a classifier learns, from releases of runs whose training sets are known
(the fit runs), which features of a release mean the target was in; it then scores the test
runs' releases (Shokri, Stronati, Song, Shmatikov, "Membership Inference Attacks against
Machine Learning Models", IEEE S&P 2017; for synthetic data Stadler et al., USENIX Security 2022,
and TAPAS, Houssiau et al. 2022, whose target-specific attacks train on the generator's own
outputs). The classifier is an L2-regularised logistic regression on standardised features
(robust with the tens to hundreds of runs an audit makes); the fit runs' scores are
out-of-fold (stratified folds seeded by the audit), so the threshold is chosen on scores of
releases the classifier did not see."""

from __future__ import annotations

import numpy as np

FOLDS = 5
C = 1.0


def _model():
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(C=C, solver="liblinear", max_iter=1000))


def scores(fit_x: np.ndarray, fit_y: np.ndarray, test_x: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    from sklearn.model_selection import StratifiedKFold

    y = np.asarray(fit_y, dtype=np.int64)
    x = np.nan_to_num(np.asarray(fit_x, dtype=np.float64))
    xt = np.nan_to_num(np.asarray(test_x, dtype=np.float64))
    folds = int(min(FOLDS, np.bincount(y, minlength=2).min()))
    oof = np.zeros(y.size)
    if folds >= 2:
        for train, held in StratifiedKFold(folds, shuffle=True, random_state=seed).split(x, y):
            if np.unique(y[train]).size < 2:
                continue
            oof[held] = _model().fit(x[train], y[train]).decision_function(x[held])
    model = _model().fit(x, y)
    return oof, model.decision_function(xt)
