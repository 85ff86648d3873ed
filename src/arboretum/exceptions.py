"""The exception and warning classes of arboretum.

Every estimator raises and warns with these, so that a user can catch one
class whatever the model:

:class:`InvalidParameterError`
    A parameter value that is not allowed (raised by ``fit`` before any data
    is read).  It is both a :class:`ValueError` and a :class:`TypeError`, as
    scikit-learn's own ``InvalidParameterError`` is.
:class:`LimitWarning`
    A limit (``time_limit``, ``memory_limit``, ``max_expansions``, ...)
    stopped a fit before it completed; the fit returned its best answer so
    far.  A subclass of scikit-learn's ``ConvergenceWarning``.
:class:`InputWarning`
    Input data that is read as documented but probably not as the user
    meant, e.g. a categorical column with so many distinct labels that
    one-hot encoding it gives hundreds of questions.
:class:`ModelFormatError`
    A file given to :func:`arboretum.load` or :meth:`arboretum.Tree.from_json`
    is not a valid, supported arboretum file.

The package warns through :func:`warn_user`, so that every warning names the
caller's line.
"""

from __future__ import annotations

import os
import sys
import warnings

from sklearn.exceptions import ConvergenceWarning

__all__ = ["InputWarning", "InvalidParameterError", "LimitWarning", "ModelFormatError", "warn_user"]

#: The package's directory: frames of files under it are arboretum's own.
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn_user(message: str, category: type[Warning]) -> None:
    """``warnings.warn(message, category)`` attributed to the first frame outside arboretum.

    A fixed ``stacklevel`` points into the library whenever the warning is raised a call deeper
    than its author assumed (a helper of ``fit``); the first caller outside the package is the
    line the user wrote (or scikit-learn's, under ``GridSearchCV``), wherever the warning starts.
    """
    frame, level = sys._getframe(0), 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


class InvalidParameterError(ValueError, TypeError):
    """A parameter has a value (or a type) that the estimator does not accept.

    The message names the parameter, what it accepts and what it got, e.g.
    ``"alpha must be a number in (0, 1]; got 1.5"``.
    """


class LimitWarning(ConvergenceWarning):
    """A limit stopped a fit early; the estimator holds its best answer so far.

    The fitted attribute ``stop_reason_`` names the limit (``"time_limit"``,
    ``"memory_limit"``, ``"max_expansions"``, ...), and ``optimal_`` (where
    the model has one) is False.  Silence it with::

        import warnings
        from arboretum import LimitWarning
        warnings.simplefilter("ignore", LimitWarning)
    """


class ModelFormatError(ValueError):
    """A saved model or tree is malformed, of an unknown version, or not an arboretum file."""


class InputWarning(UserWarning):
    """Input data read as documented, but probably not as meant (the message says what to do).

    Raised as a warning, e.g. for a categorical column with very many
    distinct labels (:func:`arboretum.data.warn_many_labels`).
    """
