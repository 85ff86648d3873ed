"""PyTorch, imported only when a convex polytope tree is fitted (the optional extra ``polytope``)."""

from __future__ import annotations

from typing import Any

INSTALL_HINT = 'pip install "arboretum[polytope]"  (PyTorch, pinned to torch==2.13.0)'


def import_torch(who: str = "ConvexPolytopeTree") -> Any:
    """Return the ``torch`` module, or raise an ImportError that says how to install it.

    Prediction, printing, plotting and loading of a fitted convex polytope tree never call this:
    they run on NumPy (:mod:`arboretum.tree`).
    """
    try:
        import torch
    except ImportError as exc:
        raise ImportError(f"{who} needs PyTorch to fit: {INSTALL_HINT}") from exc
    return torch


def resolve_device(device: str) -> Any:
    """``torch.device`` of ``"cpu"``, ``"cuda"`` (refused when no GPU is visible) or ``"auto"``."""
    torch = import_torch()
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device='cuda' but torch.cuda.is_available() is False here; use device='cpu' or 'auto'")
    return torch.device(device)
