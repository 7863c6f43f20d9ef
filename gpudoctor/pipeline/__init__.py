"""One pipeline for check and bench: choose probes and rules, fan out per Python environment, judge
(pipeline/check.py, pipeline/bench.py) into a Result each (pipeline/result.py); the run's threshold meets
the findings in one place, pipeline/verdict.py, and every renderer receives the Verdict it made."""
