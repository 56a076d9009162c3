"""The threshold-evaluation harness (installed as powercontext.eval)."""
