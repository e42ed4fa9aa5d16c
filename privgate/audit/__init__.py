"""Audits of a synthetic-data generator: run it with and without target records and bound its privacy."""
