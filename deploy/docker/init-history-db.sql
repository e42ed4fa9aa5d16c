-- A second database for privgate's score history, so its tables never mix with Dagster's.
CREATE DATABASE privgate_history;
