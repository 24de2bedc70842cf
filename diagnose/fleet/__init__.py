"""`diagnose fleet LAKE`: the same engine over a whole cluster's logs, on Ray (the `[fleet]` extra).

A lake is a directory laid out by node, LAKE/<node>/<source>.log[.gz] (and bundles from `diagnose
collect`): lake.py finds the nodes and splits their large files into byte ranges, work.py diagnoses
one node (or one range with the node's other files) through diagnose.api, runner.py runs those tasks on
Ray, reduce.py joins the per-node results into a fleet report and render.py writes it. Only runner.py
imports ray, and only when `diagnose fleet` runs."""
