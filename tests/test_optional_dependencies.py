"""arboretum needs only NumPy, SciPy, scikit-learn and numba: pandas, matplotlib and PyTorch are
optional.  A new user's ``make demo`` installs the package with the plotting extra only, so an
import that needs pandas breaks the first thing they run (it did once: the density module
imported pandas at module level)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

_SCRIPT = textwrap.dedent("""
    import sys

    class Blocked:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("pandas", "matplotlib", "torch"):
                raise ImportError(f"{name} is blocked in this test")

    sys.meta_path.insert(0, Blocked())
    import warnings
    warnings.simplefilter("ignore")
    import numpy as np
    import arboretum
    rng = np.random.default_rng(0)
    X = rng.random((60, 3)) < 0.5
    y = (X[:, 0] ^ X[:, 1]).astype(int)
    for est in (arboretum.MAPTreeClassifier(max_expansions=50), arboretum.OptimalTreeClassifier(max_splits=2),
                arboretum.PCFGTreeClassifier()):
        est.fit(X, y)
        assert est.predict(X).shape == (60,)
    C = rng.choice(np.array(["a", "b", "c"], dtype=object), size=(80, 2))
    for est in (arboretum.LeafSparseDensityTree(), arboretum.SparseDensityRuleList(n_iter=50, random_state=0),
                arboretum.CategoricalDET()):
        est.fit(C)
        assert np.isfinite(est.score(C))
    print(arboretum.LeafSparseDensityTree().fit(C).export_text().splitlines()[0])
    assert not any(m.split(".")[0] in ("pandas", "matplotlib", "torch") for m in sys.modules), sorted(sys.modules)
    print("ok")
""")


def test_import_and_fit_without_pandas_matplotlib_or_torch():
    out = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().endswith("ok")
