"""scikit-learn's estimator checks.

With ``binarize="auto"`` (the default) MAPTreeClassifier and MAPTreeRegressor
binarise the continuous X that most of scikit-learn's checks generate, so every
check must pass; so must every check of the Binarizer itself.  The regressor
runs with an expansion budget rather than a time limit: its searches on those
data do not certify, and a budget keeps repeated fits identical (several checks
compare two fits) and fast.  The only check that does
not run is ``check_array_api_input``, which scikit-learn skips unless
``SCIPY_ARRAY_API`` is set.
"""

from __future__ import annotations

import warnings

import pytest
from sklearn.utils.estimator_checks import check_estimator

from arboretum import MAPTreeClassifier, MAPTreeRegressor
from arboretum.data import Binarizer

# Checks scikit-learn itself may skip in this environment, with the reason it gives.
ALLOWED_SKIPS = {"check_array_api_input": "SCIPY_ARRAY_API is not set"}


@pytest.mark.parametrize(
    "estimator",
    [MAPTreeClassifier(time_limit=5), MAPTreeRegressor(max_expansions=300), Binarizer()],
    ids=["MAPTreeClassifier", "MAPTreeRegressor", "Binarizer"],
)
def test_check_estimator_passes(estimator):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(estimator, on_fail=None)
    assert len(results) >= 40
    for r in results:
        if r["status"] == "skipped":
            assert ALLOWED_SKIPS.get(r["check_name"], "<not allowed>") in str(r["exception"]), (
                f"{r['check_name']} was skipped: {r['exception']}"
            )
        else:
            assert r["status"] == "passed", f"{r['check_name']} failed: {r['exception']}"
