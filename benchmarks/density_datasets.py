"""The run-time datasets of the sparse density trees paper (spec-004 §8.2, Table 2) that we have offline.

Every loader returns a DataFrame of category labels (strings), preprocessed as the paper says: rows with
missing values dropped, HELOC's features and Telco's three numeric columns cut into 10 equal-width bins,
class labels kept only where the paper's feature-value count includes them (Mushroom).  Where the paper's
exact column choice is not public (Bank Full, COMPAS) the docstring says what we took.

``split(name, X)`` gives the paper's train/validation fractions (Table 2), seeded.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

ROOT = "/work/shared/datasets/"

#: validation fraction of Table 2
VALIDATION = {"Balance": 0.15, "Bank Full": 0.15, "Car": 0.15, "Chess": 0.15, "COMPAS": 0.10, "Connect-4": 0.15,
              "HELOC": 0.15, "Mushroom": 0.15, "Nursery": 0.15, "Telco": 0.15, "Titanic": 0.20}


def _arff(name: str, drop_class: bool = True) -> pd.DataFrame:
    from scipy.io import arff

    data, meta = arff.loadarff(ROOT + "uci-arff-liac/" + name)
    df = pd.DataFrame(data)
    df = df.apply(lambda c: c.str.decode("utf-8") if c.dtype == object else c.astype(str))
    if drop_class:
        df = df.iloc[:, :-1]
    return df


def _bins(x: pd.Series, n_bins: int = 10) -> pd.Series:
    """Equal-width bins of a numeric column with more than ``n_bins`` values (the paper's "10 bins")."""
    x = pd.to_numeric(x)
    if x.nunique() <= n_bins:
        return x.astype(str)
    return pd.cut(x, n_bins).astype(str)


def balance() -> pd.DataFrame:
    """4 features x 5 values (20 pairs); the class is not used."""
    return _arff("balance.scale.arff")


def car() -> pd.DataFrame:
    """6 features (21 pairs); the class is not used."""
    return _arff("car.arff")


def chess() -> pd.DataFrame:
    """King-Rook vs King-Pawn (kr-vs-kp): 36 features (73 pairs); the class is not used."""
    return _arff("kr.vs.kp.arff")


def nursery() -> pd.DataFrame:
    """8 features (27 pairs); the class is not used."""
    return _arff("nursery.arff")


def mushroom() -> pd.DataFrame:
    """22 features and the class (the paper counts 23 columns), rows with '?' dropped: 5644 rows."""
    df = _arff("mushroom.arff", drop_class=False)
    return df[~(df == "?").any(axis=1)].reset_index(drop=True)


def connect4() -> pd.DataFrame:
    """42 cells x 3 values (126 pairs); the outcome is not used."""
    df = pd.read_csv(ROOT + "pmlb-2017/connect-4.tsv.gz", sep="\t")
    return df.drop(columns="target").astype(str)


def bank_full() -> pd.DataFrame:
    """The 10 categorical columns of bank-full (46 pairs; the paper's 12 features / 51 pairs are not public)."""
    df = pd.read_csv(ROOT + "bank-marketing/bank-full.csv")
    cols = ["job", "marital", "education", "default", "housing", "loan", "contact", "month", "poutcome", "y"]
    return df[cols].astype(str)


def compas() -> pd.DataFrame:
    """7 features with 19 pairs as the paper counts: sex, age_cat, race, c_charge_degree, is_recid,
    is_violent_recid, two_year_recid (our choice; the paper's preprocessing is not public)."""
    df = pd.read_csv(ROOT + "propublica-compas/compas-scores-two-years.csv")
    cols = ["sex", "age_cat", "race", "c_charge_degree", "is_recid", "is_violent_recid", "two_year_recid"]
    return df[cols].dropna().astype(str).reset_index(drop=True)


def heloc() -> pd.DataFrame:
    """23 features, each cut into 10 equal-width bins (special codes -7/-8/-9 included in the range)."""
    df = pd.read_csv(ROOT + "heloc-hcbr/heloc_dataset_v1.csv", sep=r"\s+", header=None)
    df = df.iloc[:, 1:]
    df.columns = [f"f{j}" for j in range(df.shape[1])]
    return df.apply(_bins)


def telco() -> pd.DataFrame:
    """19 features (73 pairs): tenure, MonthlyCharges, TotalCharges in 10 bins; 11 rows without TotalCharges
    dropped (7032 rows)."""
    df = pd.read_csv(ROOT + "telco-churn/WA_Fn-UseC_-Telco-Customer-Churn.csv")
    df["TotalCharges"] = pd.to_numeric(df["TotalCharges"], errors="coerce")
    df = df.dropna().drop(columns=["customerID", "Churn"]).reset_index(drop=True)
    for c in ("tenure", "MonthlyCharges", "TotalCharges"):
        df[c] = _bins(df[c])
    return df.astype(str)


def titanic() -> tuple[pd.DataFrame, pd.DataFrame]:
    """The authors' own split (1760 train rows after dropping the malformed one, 440 test)."""
    def read(split: str) -> pd.DataFrame:
        rows = [ln.split() for ln in open(ROOT + f"density-trees-authors/titanic_{split}.tab") if len(ln.split()) == 3]
        rows = [r for r in rows if r[0] != "crew3rd_class"]
        return pd.DataFrame(rows, columns=["class", "age", "sex"])

    return read("train"), read("test")


def _numeric_labels(df: pd.DataFrame) -> pd.DataFrame:
    """Columns whose labels are all numbers become integer columns (the library reads such strings as
    numbers, so the declared categories must be numbers too)."""
    df = df.copy()
    for c in df.columns:
        x = pd.to_numeric(df[c], errors="coerce")
        if x.notna().all() and (x == x.round()).all():
            df[c] = x.astype(np.int64)
    return df


LOADERS = {"Balance": balance, "Bank Full": bank_full, "Car": car, "Chess": chess, "COMPAS": compas,
           "Connect-4": connect4, "HELOC": heloc, "Mushroom": mushroom, "Nursery": nursery, "Telco": telco,
           "Titanic": titanic}


def load(name: str, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame, list]:
    """(train, validation, categories of the whole data set per column)."""
    out = LOADERS[name]()
    out = tuple(map(_numeric_labels, out)) if isinstance(out, tuple) else _numeric_labels(out)
    if isinstance(out, tuple):
        tr, va = out
        full = pd.concat([tr, va])
    else:
        full = out
        rng = np.random.default_rng(seed)
        perm = rng.permutation(len(full))
        n_va = int(round(VALIDATION[name] * len(full)))
        va, tr = full.iloc[perm[:n_va]].reset_index(drop=True), full.iloc[perm[n_va:]].reset_index(drop=True)
    cats = [sorted(full[c].unique().tolist()) for c in full.columns]
    return tr, va, cats
