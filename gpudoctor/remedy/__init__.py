"""Apply a FixPlan: dry run, confirm, restore point, journal, verify, roll back, undo (docs/fix.md)."""
