"""UWS baseline (Shin et al., 2022): additive squared distances over triplets.

The universal weak supervision estimator treats squared distances as additive,

    E d^2(lambda_a, lambda_b) = E d^2(lambda_a, y) + E d^2(lambda_b, y),

which holds exactly in Euclidean space (independent zero-mean noise) and is biased on
curved spaces and finite metric spaces. With ``M`` the matrix of mean pairwise squared
distances between labeling functions, every triplet ``(a, b, c)`` gives

    s_a = (M_ab + M_ac - M_bc) / 2,

and UWS takes the median of these over all triplets containing ``a``. The core here is
generic (it sees only the matrix ``M``) so that finite-space and manifold label models
share it.
"""

from __future__ import annotations

import numpy as np

__all__ = ["uws_expected_sq_dist"]


def uws_expected_sq_dist(pair_sq_dist: np.ndarray) -> np.ndarray:
    """Estimate E d^2(lambda_a, y) per LF from mean pairwise squared distances.

    Parameters
    ----------
    pair_sq_dist : ndarray of shape (n_lfs, n_lfs)
        ``pair_sq_dist[a, b]`` is the mean of ``d^2(lambda_a, lambda_b)`` over rows where
        both LFs voted; ``NaN`` where the pair never co-voted. The diagonal is ignored.
        The matrix must be symmetric (off-diagonal entries that are not NaN).

    Returns
    -------
    expected_sq_dist : ndarray of shape (n_lfs,)
        Median over triplets ``(b, c)`` (``b < c``, both different from ``a``, all three
        pairs observed) of ``(M_ab + M_ac - M_bc) / 2``. ``NaN`` for an LF that is in
        no fully observed triplet. Values are not clipped: a negative value means the
        additivity assumption is badly violated for that LF.

    Raises
    ------
    ValueError
        If ``pair_sq_dist`` is not a square matrix with at least 3 rows, or is not
        symmetric, or holds negative or infinite entries.

    Notes
    -----
    Exact in Euclidean space; biased on curved spaces, where
    ``E d^2(la, lb) != E d^2(la, y) + E d^2(lb, y)`` (hyperbolic triangles are
    "longer", spherical ones "shorter"). It is the baseline of Shin et al. (2022).

    References
    ----------
    .. [1] C. Shin, W. Li, H. Vishwakarma, N. Roberts, F. Sala. "Universalizing Weak
       Supervision." ICLR 2022.

    Examples
    --------
    >>> import numpy as np
    >>> s = np.array([1.0, 2.0, 3.0])
    >>> M = s[:, None] + s[None, :]
    >>> uws_expected_sq_dist(M)
    array([1., 2., 3.])
    """
    M = np.array(pair_sq_dist, dtype=np.float64, copy=True)
    if M.ndim != 2 or M.shape[0] != M.shape[1] or M.shape[0] < 3:
        raise ValueError(
            "pair_sq_dist must be a square (n_lfs, n_lfs) matrix with n_lfs >= 3; got "
            f"shape {M.shape}. UWS needs triplets of labeling functions."
        )
    m = M.shape[0]
    off = ~np.eye(m, dtype=bool)
    vals = M[off]
    if np.isinf(vals).any() or (vals[~np.isnan(vals)] < 0).any():
        raise ValueError(
            "pair_sq_dist must hold non-negative finite mean squared distances (NaN for "
            "pairs that never co-voted); got an infinite or negative entry."
        )
    same_nan = np.isnan(M) == np.isnan(M.T)
    close = np.isclose(M, M.T, rtol=1e-9, atol=1e-12) | np.isnan(M)
    if not (same_nan & close)[off].all():
        raise ValueError(
            "pair_sq_dist must be symmetric; symmetrize it with (M + M.T) / 2."
        )
    a, b, c = np.meshgrid(np.arange(m), np.arange(m), np.arange(m), indexing="ij")
    valid = (b != a) & (c != a) & (b < c)
    # (m, m, m) array of triplet estimates for LF a from the pair (b, c).
    est = (M[a, b] + M[a, c] - M[b, c]) / 2.0
    est = np.where(valid, est, np.nan).reshape(m, m * m)
    out = np.full(m, np.nan)
    has = ~np.isnan(est).all(axis=1)
    if has.any():
        out[has] = np.nanmedian(est[has], axis=1)
    return out
