"""Adapters of generator libraries."""
