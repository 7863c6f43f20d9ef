"""Property-based fuzzing of every parser and of the rule engine (see conftest.py for the profiles)."""
