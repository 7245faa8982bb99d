"""Adapters from gramask constraints to inference frameworks (each imports its framework)."""
