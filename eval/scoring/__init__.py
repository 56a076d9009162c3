"""Scoring: the offline replay of cached candidates over the policy grid, metrics and CIs, the
recommendation, cross-validation, leave-one-corpus-out, peers, cross-backend comparison, calibration fitting."""
