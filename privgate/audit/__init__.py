"""Auditing a synthetic-data generator by running it: membership games and an empirical ε lower bound."""
