"""Dagster resources."""
