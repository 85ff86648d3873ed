"""The ``arboretum`` command.

``arboretum fit``     fits a certified MAP tree, prints it with its log posterior,
                      certificate or gap, and training / cross-validated accuracy
                      next to CART's; ``--save`` writes the model as JSON.
                      Columns that are not 0/1 are binarised (thresholds for
                      numbers, one-hot for text), and the tree reads on the raw
                      columns.  ``--task regression`` fits a MAPTreeRegressor
                      (real-valued target; R^2 instead of accuracy).
``arboretum predict`` applies a saved model (any estimator saved with
                      ``arboretum.save``, or a tree saved with ``Tree.to_json``)
                      to a CSV file.
``arboretum datasets`` lists the bundled datasets.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from .binarizer import STRATEGIES

__all__ = ["main"]

#: Cell texts read as a missing value (which MAPTree refuses with a clear error).
MISSING = frozenset({"", "?", "na", "n/a", "nan", "null", "none"})


def _read_csv(path: str) -> tuple[list[str], list[list[str]]]:
    p = Path(path)
    if not p.is_file():
        raise SystemExit(f"error: CSV file not found: {path}")
    with p.open(newline="") as fh:
        rows = list(csv.reader(fh))
    rows = [r for r in rows if r]
    if len(rows) < 2:
        raise SystemExit(f"error: {path} needs a header row and at least one data row")
    header, body = [h.strip() for h in rows[0]], rows[1:]
    for i, r in enumerate(body):
        if len(r) != len(header):
            raise SystemExit(
                f"error: {path} line {i + 2} has {len(r)} fields but the header has {len(header)}"
            )
    return header, body


def _to_float(body: list[list[str]], cols: list[int], header: list[str], path: str) -> np.ndarray:
    from .data import parse_number

    out = np.empty((len(body), len(cols)), dtype=np.float64)
    for i, r in enumerate(body):
        for j, c in enumerate(cols):
            _check_not_missing(r[c], i, header[c], path)
            x = parse_number(r[c])
            if x is None:
                raise SystemExit(
                    f"error: {path} line {i + 2}, column {header[c]!r}: {r[c]!r} is not a number"
                )
            out[i, j] = x
    return out


def _check_not_missing(cell: str, i: int, column: str, path: str) -> None:
    if cell.strip().lower() in MISSING:
        raise SystemExit(
            f"error: {path} line {i + 2}, column {column!r}: missing value {cell!r}; MAPTree does not "
            f"support missing values (impute them or drop those rows first)"
        )


def _read_features(
    body: list[list[str]], cols: list[int], header: list[str], path: str, text_columns: set[str]
) -> np.ndarray:
    """Feature matrix of a CSV: float64 when every column is numeric, else an object
    array holding floats for numeric columns and stripped strings for text columns.

    A column is numeric when every cell reads as a number by the rule the Python
    estimators apply to text (:func:`arboretum.data.text_as_numbers`), unless it is in
    ``text_columns`` (``--categorical``, passed on to the Binarizer as ``categorical``)."""
    from .data import text_as_numbers

    columns = []
    for c in cols:
        cells = [r[c].strip() for r in body]
        for i, cell in enumerate(cells):
            _check_not_missing(cell, i, header[c], path)
        x = None if header[c] in text_columns else text_as_numbers(np.asarray(cells))
        columns.append(cells if x is None else x)
    if all(not isinstance(col, list) for col in columns):
        return np.column_stack(columns) if columns else np.empty((len(body), 0))
    X = np.empty((len(body), len(cols)), dtype=object)
    for j, col in enumerate(columns):
        X[:, j] = col
    return X


def _load_training_data(args) -> tuple[np.ndarray, np.ndarray, list[str], str]:
    if args.dataset:
        from .datasets import load_dataset

        try:
            b = load_dataset(args.dataset)
        except ValueError as e:
            raise SystemExit(f"error: {e}") from None
        return b.data, b.target, list(b.feature_names), args.dataset
    header, body = _read_csv(args.csv)
    if args.target not in header:
        raise SystemExit(
            f"error: --target {args.target!r} is not a column of {args.csv}; columns: {', '.join(header)}"
        )
    t = header.index(args.target)
    cols = [j for j in range(len(header)) if j != t]
    X = _read_features(body, cols, header, args.csv, set(args.categorical or []))
    if getattr(args, "task", "classification") == "regression":
        y = _to_float(body, [t], header, args.csv)[:, 0]
    else:
        y = np.array([r[t].strip() for r in body])
        try:
            y = y.astype(np.int64)
        except ValueError:
            pass
    return X, y, [header[j] for j in cols], Path(args.csv).name


def _cv_scores(make, X, y, folds: int, seed: int, regression: bool = False) -> np.ndarray:
    """Test score (accuracy, or R^2 for regression) of every fold of shuffled cross-validation
    (stratified for classification)."""
    from sklearn.model_selection import KFold, StratifiedKFold

    if regression:
        cv = KFold(n_splits=folds, shuffle=True, random_state=seed)
    else:
        cv = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    scores = []
    for tr, te in cv.split(X, y):
        scores.append(make().fit(X[tr], y[tr]).score(X[te], y[te]))
    return np.asarray(scores)


def _say_if_compiling(Estimator) -> None:
    """Tell the user, once, when the first fit will compile the numba kernels (first run on a
    machine, or after an upgrade): tens of seconds that are not the search's."""
    from ._compile import is_cached, is_warm

    family = Estimator._kernel_family
    if family is not None and not is_warm(family) and not is_cached(family):
        print(
            f"Compiling the {Estimator.__name__} kernels (first run on this machine; later runs load "
            "them from numba's cache) ...",
            file=sys.stderr,
            flush=True,
        )


def _cmd_fit(args) -> int:
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

    from .data import Binarizer, encode_columns, read_columns
    from .maptree import MAPTreeClassifier, MAPTreeRegressor

    regression = args.task == "regression"
    X, y, names, label = _load_training_data(args)
    rho = tuple(args.rho) if len(args.rho) > 1 else args.rho[0]
    params = dict(
        alpha=args.alpha, beta=args.beta, max_depth=args.max_depth, max_expansions=args.max_expansions,
        time_limit=args.time_limit, memory_limit=args.memory_limit, strategy=args.strategy,
    )
    if regression:
        y = np.asarray(y, dtype=np.float64)
        Estimator, Cart, metric = MAPTreeRegressor, DecisionTreeRegressor, "R^2"
    else:
        params["rho"] = rho
        Estimator, Cart, metric = MAPTreeClassifier, DecisionTreeClassifier, "acc"
    unknown = [c for c in args.categorical or [] if c not in names]
    if unknown:
        raise SystemExit(
            f"error: --categorical names {', '.join(map(repr, unknown))}, not a feature column of "
            f"{label}; columns: {', '.join(names)}"
        )

    categorical = [names.index(c) for c in args.categorical or []] or None

    def make_maptree():
        binarizer = Binarizer(
            n_thresholds=args.n_thresholds, strategy=args.threshold_strategy, categorical=categorical
        )
        return Estimator(**params, binarizer=binarizer)

    from .exceptions import LimitWarning

    # The command prints whether the search was certified itself (below), so the limit warning of
    # each fit (cross-validation included) would only repeat it.
    warnings.simplefilter("ignore", LimitWarning)
    _say_if_compiling(Estimator)
    try:
        clf = make_maptree().fit(X, y)
    except (TypeError, ValueError) as e:
        raise SystemExit(f"error: {e}") from None
    if clf.compile_time_ >= 1.0:
        print(f"(compiled in {clf.compile_time_:.1f} s, outside the time limit)", file=sys.stderr)
    clf.tree_.feature_names = list(names)  # a CSV's header: the saved model predicts by column name

    n, d = X.shape
    target = (
        f"target mean {y.mean():.4g}, sd {y.std():.4g}" if regression else f"classes {clf.classes_.tolist()}"
    )
    if clf.binarizer_ is None:
        print(f"Dataset: {label} ({n} samples x {d} binary features; {target})")
        X_cart = encode_columns(read_columns(X)[0], None)  # numbers, also for --categorical 0/1 text
    else:
        kinds = clf.binarizer_.column_kinds_
        text = [nm for nm, k in zip(names, kinds) if k in ("categorical", "ordered")]
        print(
            f"Dataset: {label} ({n} samples x {d} features -> {len(clf.binarizer_.splits_)} binary "
            f"features; {target})"
        )
        how = (
            f"up to {args.n_thresholds} quantile thresholds"
            if args.threshold_strategy == "quantile" else "every threshold"
        )
        print(f"Binarised: {how} per numeric column" + (
            f"; one-hot categories for {', '.join(text)}" if text else ""
        ))
        X_cart = clf.binarizer_.encode(X)  # CART sees categories as their integer codes
    if regression:
        p = clf.prior_  # None when its scale (units of y squared) is outside float64
        leaf = "" if p is None else (
            f" (mean={p.mean:.4g}, kappa={p.kappa:.4g}, shape={p.shape:.4g}, scale={p.scale:.4g})"
        )
        print(f"MAPTree prior: alpha={args.alpha}, beta={args.beta}, normal-inverse-gamma leaves{leaf}")
    else:
        print(f"MAPTree prior: alpha={args.alpha}, beta={args.beta}, rho={rho}")
    print()
    print(clf.export_text(feature_names=names).rstrip())
    print()
    print(f"log posterior of this tree:  {clf.log_posterior_:.4f}")
    if clf.optimal_:
        print(
            f"certificate: optimal (no tree has a higher posterior), "
            f"{clf.n_expansions_:,} expansions in {clf.search_time_:.2f} s"
        )
    else:
        print(
            f"not certified (stopped by {clf.stop_reason_}): no tree exceeds "
            f"{clf.log_posterior_bound_:.4f}, gap {clf.gap_:.4f} nats; "
            f"{clf.n_expansions_:,} expansions in {clf.search_time_:.2f} s"
        )

    models = [
        ("MAPTree", make_maptree),
        ("CART depth 4", lambda: Cart(max_depth=4, random_state=0)),
        ("CART unpruned", lambda: Cart(random_state=0)),
    ]
    folds = args.cv
    if folds and folds > 1:
        if regression:
            if n < folds:
                print(f"\n(cross-validation skipped: {n} < {folds} samples)")
                folds = 0
        else:
            counts = np.unique(y, return_counts=True)[1]
            if counts.min() < folds:
                print(f"\n(cross-validation skipped: the smallest class has {counts.min()} < {folds} samples)")
                folds = 0
    print()
    header = f"{'model':<14} {'leaves':>6} {'train ' + metric:>9}"
    if folds and folds > 1:
        header += f"  {folds}-fold test {metric} (mean ± sd)"
    print(header)
    t0 = time.perf_counter()
    for name, make in models:
        data = X if name == "MAPTree" else X_cart
        m = clf if name == "MAPTree" else make().fit(data, y)
        leaves = m.tree_.n_leaves
        row = f"{name:<14} {leaves:>6} {m.score(data, y):>9.3f}"
        if folds and folds > 1:
            try:
                s = _cv_scores(make, data, y, folds, args.seed, regression)
                row += f"  {s.mean():.3f} ± {s.std():.3f}"
            except ValueError as e:  # e.g. a category that only occurs in a test fold
                row += f"  n/a ({e})"
        print(row, flush=True)
    if folds and folds > 1:
        how = "shuffled" if regression else "stratified, shuffled"
        print(f"({how} with seed {args.seed}; {time.perf_counter() - t0:.1f} s)")

    if args.save:
        from .io import save

        save(clf, args.save)
        print(f"\nmodel saved to {args.save}")
    return 0


def _load_model(path: str):
    """A saved estimator, or a :class:`~arboretum.Tree` saved with ``Tree.to_json``."""
    import json

    from .exceptions import ModelFormatError
    from .io import load
    from .tree import Tree

    p = Path(path)
    if not p.is_file():
        raise SystemExit(f"error: model file not found: {path}")
    try:
        return load(p)
    except ModelFormatError as e:
        try:  # a bare tree
            d = json.loads(p.read_text())
            if isinstance(d, dict) and d.get("format") == "arboretum.Tree":
                return Tree.from_dict(d)
        except (ValueError, ModelFormatError) as e2:
            raise SystemExit(f"error: {path} does not hold an arboretum model: {e2}") from None
        raise SystemExit(f"error: {path} does not hold an arboretum model: {e}") from None


def _model_columns(model) -> tuple[list[str] | None, list | None, int]:
    """Feature names, category labels per column and number of features of a model or tree."""
    tree = getattr(model, "tree_", model)
    names = tree.feature_names
    if names is None and getattr(model, "feature_names_in_", None) is not None:
        names = [str(n) for n in model.feature_names_in_]
    return names, tree.feature_categories, tree.n_features


def _features_for(body, cols, header, path, categories) -> np.ndarray:
    """The CSV columns ``cols`` as raw values: labels for categorical columns, else numbers."""
    X = np.empty((len(body), len(cols)), dtype=object)
    for j, c in enumerate(cols):
        labels = None if categories is None else categories[j]
        if labels is None:
            X[:, j] = _to_float(body, [c], header, path)[:, 0]
            continue
        by_text = {str(v): v for v in labels}  # a CSV holds text: match labels of other types by their text
        for i, r in enumerate(body):
            _check_not_missing(r[c], i, header[c], path)
            v = r[c].strip()
            X[i, j] = by_text.get(v, v)
    return X


def _cmd_predict(args) -> int:
    model = _load_model(args.model)
    header, body = _read_csv(args.csv)
    names, categories, n_features = _model_columns(model)
    if names is not None and all(nm in header for nm in names):
        cols = [header.index(nm) for nm in names]
    else:
        cols = [j for j, h in enumerate(header) if h != args.target]
        if len(cols) != n_features:
            missing = [nm for nm in (names or []) if nm not in header]
            hint = f" (missing columns: {', '.join(missing[:10])})" if missing else ""
            raise SystemExit(
                f"error: the model needs {n_features} features but {args.csv} has "
                f"{len(cols)} usable columns{hint}"
            )
    X = _features_for(body, cols, header, args.csv, categories)
    tree = getattr(model, "tree_", model)
    regression = tree.task == "regression"
    try:
        pred = model.predict(X)
        proba = None if regression else model.predict_proba(X)
    except (TypeError, ValueError) as e:
        raise SystemExit(f"error: {args.csv}: {e}") from None
    out = sys.stdout if args.output in (None, "-") else open(args.output, "w", newline="")
    try:
        w = csv.writer(out)
        if proba is None:
            w.writerow(["prediction"])
            for v in pred:
                w.writerow([repr(float(v))])
        else:
            classes = getattr(model, "classes_", tree.classes)
            classes = list(classes) if classes is not None else list(range(proba.shape[1]))
            w.writerow(["prediction"] + [f"p({c})" for c in classes])
            for i in range(len(pred)):
                w.writerow([pred[i]] + [f"{p:.6g}" for p in proba[i]])
    finally:
        if out is not sys.stdout:
            out.close()
    if args.target in header:
        t = header.index(args.target)
        if regression:
            truth = _to_float(body, [t], header, args.csv)[:, 0]
            resid = np.sum((truth - pred) ** 2)
            total = np.sum((truth - truth.mean()) ** 2)
            r2 = 1.0 - resid / total if total > 0 else float("nan")
            print(f"R^2 against column {args.target!r}: {r2:.4f}", file=sys.stderr)
        else:
            truth = np.array([r[t].strip() for r in body])
            acc = np.mean(truth == np.asarray(pred).astype(str))
            print(f"accuracy against column {args.target!r}: {acc:.4f}", file=sys.stderr)
    return 0


def _cmd_datasets(args) -> int:
    from .datasets import list_datasets, load_dataset

    for name in list_datasets():
        X, y = load_dataset(name, return_X_y=True)
        print(f"{name:<18} {X.shape[0]:>5} x {X.shape[1]:<4} classes {np.bincount(y).tolist()}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="arboretum", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)

    f = sub.add_parser("fit", help="fit a certified MAP tree (MAPTree) and compare it with CART")
    src = f.add_mutually_exclusive_group(required=True)
    src.add_argument("--dataset", help="a bundled dataset (see `arboretum datasets`)")
    src.add_argument(
        "--csv",
        help="a CSV file with a header row; 0/1, numeric and text columns (text columns are "
        "categorical; empty, '?' and 'NA' cells are missing values, which are refused)",
    )
    f.add_argument("--target", help="label (or, with --task regression, target) column of --csv")
    f.add_argument(
        "--task", choices=["classification", "regression"], default="classification",
        help="'classification' (default): MAPTreeClassifier; 'regression': MAPTreeRegressor on a "
        "real-valued target (normal-inverse-gamma leaves with data-derived defaults)",
    )
    f.add_argument("--alpha", type=float, default=0.95, help="prior split probability at the root (0, 1]")
    f.add_argument("--beta", type=float, default=0.5, help="decay of the split probability with depth, >= 0")
    f.add_argument(
        "--rho", type=float, nargs="+", default=[2.5],
        help="Dirichlet leaf prior: one value for every class (default 2.5), or one per class",
    )
    f.add_argument("--time-limit", type=float, default=60.0, help="seconds per search (default 60)")
    f.add_argument("--max-expansions", type=int, default=None, help="node expansions per search")
    f.add_argument(
        "--max-depth", type=int, default=None,
        help="only trees of at most this depth (the MAP tree among them is certified)",
    )
    f.add_argument("--memory-limit", type=float, default=None, help="MiB for the search graph")
    f.add_argument(
        "--strategy", choices=["focused", "best-first"], default="focused",
        help="search order: 'focused' (default) searches the best tree's subproblems first and finds "
        "better trees under a time limit; 'best-first' is the paper's (same optimum and certificate)",
    )
    f.add_argument("--cv", type=int, default=10, help="folds of stratified cross-validation (0: none)")
    f.add_argument("--seed", type=int, default=0, help="shuffling seed for cross-validation")
    f.add_argument("--save", help="write the fitted model to this JSON file")
    f.add_argument(
        "--n-thresholds", type=int, default=8,
        help="binarisation of non-0/1 columns: thresholds per numeric column (default 8)",
    )
    f.add_argument(
        "--threshold-strategy", choices=list(STRATEGIES), default="boosting",
        help="'boosting' (default): the cuts a small boosted ensemble fitted to the target uses, most "
        "useful first; 'mixed': those topped up with quantile cuts; 'quantile': at the quantiles; "
        "'uniform': at equal widths; 'all': between every two consecutive distinct values",
    )
    f.add_argument(
        "--categorical", nargs="+", metavar="COLUMN",
        help="read these --csv columns as text, i.e. categorical (one-hot), even if they hold numbers",
    )
    f.set_defaults(func=_cmd_fit)

    pr = sub.add_parser("predict", help="predict a CSV file with a saved model")
    pr.add_argument("model", help="JSON file written by `arboretum fit --save` or arboretum.save")
    pr.add_argument("--csv", required=True, help="CSV file with a header row")
    pr.add_argument("--target", default=None, help="label column to ignore (and score against, if present)")
    pr.add_argument("--output", default=None, help="write predictions here instead of standard output")
    pr.set_defaults(func=_cmd_predict)

    ds = sub.add_parser("datasets", help="list the bundled datasets")
    ds.set_defaults(func=_cmd_datasets)

    from ._compile import families

    co = sub.add_parser(
        "compile",
        help="compile the numba kernels now (once per machine; fits load them from numba's cache)",
    )
    co.add_argument(
        "family", nargs="*", metavar="FAMILY",
        help=f"model families to compile (default: all): {', '.join(families())}",
    )
    co.set_defaults(func=_cmd_compile)
    return p


def _cmd_compile(args) -> int:
    from ._compile import families, is_cached, warm_up

    unknown = [f for f in args.family if f not in families()]
    if unknown:
        raise SystemExit(f"error: unknown model family {', '.join(map(repr, unknown))}; one of: {', '.join(families())}")
    for family in args.family or families():
        cached = is_cached(family)
        seconds = warm_up(family)
        how = "loaded from numba's cache" if cached else "compiled"
        print(f"{family}: {how} in {seconds:.2f} s", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``arboretum`` command."""
    args = build_parser().parse_args(argv)
    if getattr(args, "csv", None) and args.command == "fit" and not args.target:
        build_parser().error("--csv needs --target COLUMN")
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:  # e.g. `arboretum datasets | head`
        sys.stderr.close()
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
