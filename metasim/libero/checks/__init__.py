"""Checks of LIBERO's import against its reference simulator: parity, model-field diff,
success cross-check, and the MJX support matrix."""
