"""PyTorch, imported only when a convex polytope tree is fitted (the optional extra ``polytope``)."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

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


@contextmanager
def flush_denormals(torch: Any) -> Iterator[None]:
    """Flush subnormal floats to zero on this thread's CPU while the block runs, then restore the mode.

    Training drives some experts' pre-activations below -87 on many rows, where ``softplus`` and its
    gradient return float32 subnormals (under 1.2e-38): 1.9% of the softplus values of a depth-2 fit
    on HIV's 2,048 fingerprint bits.  x86 processors compute with subnormals through a slow path, so
    an epoch of that fit's second level took four to five times as long as one of its first over the
    same rows.  Flushed to zero they change the committees' intensities by under 1e-37; the fits of
    HIV tried gave the same trees and predictions bit for bit, in 60-83% of the time.  The mode is
    left on where it already was (:func:`flushes_subnormals`); where the processor cannot flush,
    nothing changes.
    """
    if flushes_subnormals(torch) or not torch.set_flush_denormal(True):
        yield
        return
    try:
        yield
    finally:
        torch.set_flush_denormal(False)


def flushes_subnormals(torch: Any) -> bool:
    """Whether this thread's CPU flushes float32 subnormals to zero now.  PyTorch has no getter for the
    mode, so a product of a subnormal tells."""
    return bool((torch.tensor([1e-40], dtype=torch.float32) * 1.0)[0] == 0)
