"""Evaluation measures of the QP paper (sec. 6.1-6.2) and distances between latent posteriors.

* test error TE = (sum_i |y_*i - yhat_*i| / 2) / m with yhat the predicted label (predictive
  probability thresholded at 1/2) for classification (sec. 6.1), and TE = (sum_i |y_*i - yhat_*i|) / m
  for counts (sec. 6.2) with yhat the mode of the negative binomial of App. H for Poisson-square
  counts, the likelihood's point prediction otherwise (Poisson-exp: its predictive mean; real
  y: the latent predictive mean);
* negative test log-likelihood NTLL = -(sum_i log q(y_*i | x_*i)) / m;
* ``marginal_distances``: how far a Gaussian approximation's latent marginals are from a
  reference (the MCMC posterior): RMS differences of means and of standard deviations, and the
  mean W2 distance between the 1-D marginals, sqrt((m_a - m_b)^2 + (s_a - s_b)^2).
"""
from __future__ import annotations

import numpy as np

__all__ = ["predicted_labels", "test_error", "negative_test_log_likelihood", "evaluate", "marginal_distances"]


def predicted_labels(prob_positive) -> np.ndarray:
    """+1 where p(y = +1) >= 1/2, else -1 (sec. 6.1: threshold at 1/2)."""
    return np.where(np.asarray(prob_positive, float) >= 0.5, 1.0, -1.0)


def test_error(y_true, y_pred, labels: bool = True) -> float:
    """TE = (sum_i |y_i - yhat_i| / 2) / m for labels -1/+1 (sec. 6.1: the fraction misclassified),
    (sum_i |y_i - yhat_i|) / m otherwise (``labels=False``; sec. 6.2, counts)."""
    y_true = np.asarray(y_true, float)
    y_pred = np.asarray(y_pred, float)
    if y_true.shape != y_pred.shape or y_true.size == 0:
        raise ValueError(f"y_true and y_pred need the same non-empty shape; got {y_true.shape} and {y_pred.shape}")
    return float(np.sum(np.abs(y_true - y_pred)) / (2.0 if labels else 1.0) / y_true.size)


def negative_test_log_likelihood(log_predictive) -> float:
    """NTLL = -(sum_i log q(y_i | x_i)) / m (sec. 6.1)."""
    lp = np.asarray(log_predictive, float)
    if lp.size == 0:
        raise ValueError("need at least one test point")
    return float(-np.mean(lp))


def evaluate(posterior, X_test, y_test) -> dict:
    """{"test_error", "ntll"} of a fitted posterior on test data (binary labels or Poisson-square counts)."""
    lik = posterior.likelihood
    y_test = lik.check_y(y_test)
    if lik.support == "binary":
        y_hat = predicted_labels(posterior.predict_proba(X_test))
    else:  # the likelihood's own point prediction (predictive mean; App. H mode for Poisson-square)
        y_hat = lik.point_prediction(*posterior.predict_f(X_test))
    return {
        "test_error": test_error(y_test, y_hat, labels=lik.support == "binary"),
        "ntll": negative_test_log_likelihood(posterior.predictive_log_density(X_test, y_test)),
    }


def marginal_distances(mean, var, ref_mean, ref_var) -> dict:
    """RMS mean / std differences and mean marginal W2 of N(mean, var) against N(ref_mean, ref_var)."""
    sd, ref_sd = np.sqrt(np.asarray(var, float)), np.sqrt(np.asarray(ref_var, float))
    dm = np.asarray(mean, float) - np.asarray(ref_mean, float)
    ds = sd - ref_sd
    return {
        "rms_mean": float(np.sqrt(np.mean(dm**2))),
        "rms_std": float(np.sqrt(np.mean(ds**2))),
        "mean_w2": float(np.mean(np.sqrt(dm**2 + ds**2))),
    }
