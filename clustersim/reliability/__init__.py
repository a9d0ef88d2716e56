"""Reliability: expected goodput under failures (:mod:`.goodput`), checkpoint sizes from a
scenario (:mod:`.checkpoint`) and injected faults in a simulated step (:mod:`.faults`)."""
