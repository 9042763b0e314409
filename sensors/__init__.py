"""Dagster sensors."""
