"""Dagster definitions for Nexus Memory."""
