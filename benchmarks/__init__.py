"""asv benchmark suites of newtonad (run with ``make bench``)."""
