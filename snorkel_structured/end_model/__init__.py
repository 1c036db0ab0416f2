"""Structured end models trained on weak labels."""
