"""Scoring: the offline replay of cached candidates over the policy grid, metrics and CIs, the
recommendation, cross-validation, leave-one-corpus-out, peers, external runs scored, cross-backend comparison, calibration."""
