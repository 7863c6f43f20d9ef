"""From an error message to its cause on this host: matching, entries, explaining (docs/explain.md)."""
