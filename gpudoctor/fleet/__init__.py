"""The fleet view: per-node JSON reports (`gpudoctor check --format json`) merged into one.

load (read and validate reports) -> merge (fleet rules over all nodes) -> report (text, JSON, Markdown).
The fleet rules are a table of data (rules.py) evaluated by one function (merge.evaluate).
"""
